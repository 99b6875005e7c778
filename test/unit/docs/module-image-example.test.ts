import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODULE_DIR, RUNTIME_PATH } from '../../../src/schemas/job-contract.ts';

// examples/module-image/ is what docs/image-contract.md tells users to adapt. Its Dockerfile cannot be
// built here (no container engine), so this keeps it in step with the contract and with the tree the local
// node runs in test/e2e/module-image-example.test.ts: the same two paths, and the OpenTofu version the
// project tests with.

const root = join(import.meta.dirname, '..', '..', '..');
const example = join(root, 'examples', 'module-image');
/** The Dockerfile's instructions: comment lines and blank lines dropped. */
const instructions = readFileSync(join(example, 'Dockerfile'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.startsWith('#'));

describe('examples/module-image', () => {
  it('builds FROM scratch with exactly the runtime and the module at the contract paths', () => {
    const final = instructions.slice(instructions.findLastIndex((line) => line.startsWith('FROM ')));
    expect(final).toEqual([
      'FROM scratch',
      `COPY --from=tofu /usr/local/bin/tofu ${RUNTIME_PATH}`,
      `COPY captf/module/ ${MODULE_DIR}/`,
    ]);
  });

  it("pins the OpenTofu version the project's tests run", () => {
    const tested = /^TOFU_VERSION=(.+)$/m.exec(
      readFileSync(join(root, 'scripts', 'versions.env'), 'utf8'),
    )?.[1];
    expect(tested).toBeDefined();
    expect(instructions).toContain(`ARG TOFU_VERSION=${tested}`);
    // The Dockerfile's own ARG reference, written as Docker reads it.
    const from = ['FROM ghcr.io/opentofu/opentofu:', '$', '{TOFU_VERSION}-minimal AS tofu'].join('');
    expect(instructions).toContain(from);
  });

  it("the local node's image of it links the runtime where the Dockerfile copies it", () => {
    const image = JSON.parse(readFileSync(join(example, 'image.json'), 'utf8')) as {
      links: Record<string, string>;
    };
    expect(image.links).toEqual({ [RUNTIME_PATH.replace(/^\//, '')]: 'tofu' });
  });
});
