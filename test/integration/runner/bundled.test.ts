import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { localBackend, runRunner, stepNames } from './runner-process.ts';

// The delivered runner: `npm run build:runner` makes one executable; `runner copy <dir>` (the Job's init
// container) puts it, its loader and its libraries into a directory; the `source` container runs it
// through that loader, so the module image needs no Node, no shell and no C library (docs/image-contract.md).

const repoRoot = resolve(import.meta.dirname, '../../..');
let binDir = '';

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'captf-runner-sea-'));
  const built = join(dir, 'build', 'runner');
  execFileSync(process.execPath, [join(repoRoot, 'src/runner/build-sea.ts'), built], { stdio: 'pipe' });
  binDir = join(dir, 'bin');
  execFileSync(built, ['copy', binDir], { stdio: 'pipe' });
}, 120_000);

describe('the bundled runner (single executable)', () => {
  it('copy fills the bin dir with the runner, its loader and its libraries, all executable', async () => {
    const entries = await readdir(binDir);
    expect(entries.sort()).toEqual(['ld.so', 'lib', 'runner']);
    const libs = await readdir(join(binDir, 'lib'));
    expect(libs).toContain('libc.so.6');
    for (const file of ['runner', 'ld.so']) expect((await stat(join(binDir, file))).mode & 0o111).toBe(0o111);
  });

  it('runs an apply through its own loader: same steps and result as the development runner', async () => {
    const state = join(await mkdtemp(join(tmpdir(), 'captf-runner-state-')), 'terraform.tfstate');
    const run = await runRunner({
      command: [join(binDir, 'ld.so'), '--library-path', join(binDir, 'lib'), join(binDir, 'runner')],
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-sea' }, backend: localBackend(state) },
    });
    expect(run.exitCode).toBe(0);
    expect(run.stderr).not.toContain('ExperimentalWarning');
    expect(stepNames(run.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json', 'apply']);
    expect(run.result.outputs?.providerID).toMatch(/^captf-test:\/\//);
  });

  it('the development runner refuses to copy itself (only the single executable can)', () => {
    const dest = join(tmpdir(), 'captf-runner-no-copy');
    const run = spawnSync(process.execPath, [join(repoRoot, 'src/runner/main.ts'), 'copy', dest], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('copy runner: not the bundled executable');
  });
});
