import { execFileSync, spawnSync } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunnerResult } from '../../../src/schemas/result.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import { FIXTURES, localBackend, runRunner, stepNames, TEST_HMAC_KEY, tofuPath } from './runner-process.ts';

// The delivered runner: `npm run build:runner` makes one executable; `runner copy <dir>` (the Job's init
// container) puts it, its loader and its libraries into a directory; the `source` container runs it
// through that loader, so the module image needs no Node, no shell and no C library (docs/image-contract.md).

const repoRoot = resolve(import.meta.dirname, '../../..');
let binDir = '';

beforeAll(async () => {
  const dir = testTempDir('captf-runner-sea-');
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
    const state = join(testTempDir('captf-runner-state-'), 'terraform.tfstate');
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

  it('runs in an empty root (chroot) holding only /captf and /dev/null: no shell, no Node, no C library', async () => {
    // chroot and mknod need root, as the Job's kubelet has; the test machines and CI run as root.
    expect(process.getuid?.(), 'this test needs root (chroot, mknod)').toBe(0);
    const root = testTempDir('captf-runner-root-');
    for (const dir of ['captf/module', 'captf/config', 'out', 'dev'])
      await mkdir(join(root, dir), { recursive: true });
    execFileSync('mknod', ['-m', '666', join(root, 'dev/null'), 'c', '1', '3']);
    execFileSync(join(binDir, 'runner'), ['copy', join(root, 'captf/bin')], { stdio: 'pipe' });
    await copyFile(join(FIXTURES, 'machine/main.tf'), join(root, 'captf/module/main.tf'));
    await copyFile(await tofuPath(), join(root, 'captf/runtime'));
    const config = { version: 1, variables: { name: 'm-root' }, planHmacKey: TEST_HMAC_KEY };
    await writeFile(join(root, 'captf/config/run.json'), JSON.stringify(config));
    expect((await readdir(root)).sort()).toEqual(['captf', 'dev', 'out']);

    const command = ['/captf/bin/ld.so', '--library-path', '/captf/bin/lib', '/captf/bin/runner'];
    const run = spawnSync(
      'chroot',
      [root, ...command, 'run', '--op=apply', '--result-file=/out/termination-log'],
      {
        encoding: 'utf8',
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const parsed = parseRunnerResult(await readFile(join(root, 'out/termination-log'), 'utf8'));
    expect(parsed.ok && parsed.result.result).toBe('succeeded');
    expect(parsed.ok && parsed.result.outputs?.providerID).toMatch(/^captf-test:\/\//);
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
