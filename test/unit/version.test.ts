import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { CAPTF_VERSION } from '../../src/version.ts';

const root = join(import.meta.dirname, '..', '..');

it('the release is one number: package.json, src/version.ts and the image tags of infra/kustomization.yaml', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  expect(CAPTF_VERSION).toBe(pkg.version);
  const kustomization = readFileSync(join(root, 'infra/kustomization.yaml'), 'utf8');
  const tags = [...kustomization.matchAll(/ghcr\.io\/captf\/captf-[a-z]+:([^\s]+)/g)].map(
    (match) => match[1],
  );
  expect(tags.length).toBeGreaterThan(0);
  for (const tag of tags) expect(tag).toBe(CAPTF_VERSION);
});
