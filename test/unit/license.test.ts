import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

it('LICENSE is the licence package.json names (Apache-2.0)', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string };
  expect(pkg.license).toBe('Apache-2.0');
  const text = readFileSync(join(root, 'LICENSE'), 'utf8');
  expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
  expect(text).toContain('END OF TERMS AND CONDITIONS');
});
