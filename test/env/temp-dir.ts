import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * The temp dirs of the test file that imports this module, removed after its last test. This hook is
 * registered when the file's imports load, before the file's own: vitest runs `afterAll` hooks in reverse
 * order, so the servers and processes a file stops in its `afterAll` are gone before their dirs are.
 * `CAPTF_KEEP_STACK=1` keeps them for the logs, like the stack's (test/env/global-setup.ts).
 */
const tempDirs: string[] = [];
afterAll(() => {
  const dirs = tempDirs.splice(0);
  if (process.env.CAPTF_KEEP_STACK) return;
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A new dir `<tmpdir>/<prefix>XXXXXX`, removed after the calling test file's last test. */
export function testTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}
