// The runner's wall-time overhead (issue 6): one `apply` of the `machine` fixture through the runner versus
// the same tofu commands run directly (init, validate, plan -out, show -json, apply of the saved plan), each
// on fresh local state. Measures the development runner (`node src/runner/main.ts`) and the bundled single
// executable (built into a temp dir first). Prints means and the ratio runner/direct.
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { access, cp, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const ITERATIONS = 5;
const root = resolve(import.meta.dirname, '..');
const moduleDir = join(root, 'test/fixtures/modules/machine');
const tofu = join(homedir(), '.cache/captf/bin/tofu-v1.12.6/tofu');
const variables = { name: 'bench' };

await access(tofu, constants.X_OK).catch(() => {
  throw new Error(`runner bench: ${tofu} is missing; run scripts/build-binaries.sh tofu`);
});

function timed(action: () => void): number {
  const started = performance.now();
  action();
  return performance.now() - started;
}

async function direct(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'captf-bench-direct-'));
  const work = join(dir, 'module');
  await cp(moduleDir, work, { recursive: true });
  const varFile = join(dir, 'vars.json');
  await writeFile(varFile, JSON.stringify(variables));
  const plan = join(dir, 'plan');
  const env = { ...process.env, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
  const run = (args: string[]) =>
    execFileSync(tofu, args, { cwd: work, env, stdio: 'pipe', maxBuffer: 64 << 20 });
  const lock = '-lock-timeout=300s';
  return timed(() => {
    run(['init', '-input=false', '-no-color', '-json', lock]);
    run(['validate', '-no-color', '-json']);
    run(['plan', '-input=false', '-no-color', '-json', lock, `-var-file=${varFile}`, `-out=${plan}`]);
    run(['show', '-no-color', '-json', plan]);
    run(['apply', '-input=false', '-no-color', '-json', lock, plan]);
  });
}

async function viaRunner(command: string[]): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'captf-bench-runner-'));
  await mkdir(join(dir, 'config'));
  const config = { version: 1, variables, planHmacKey: 'bench-key-0123456789abcdef0123456789' };
  await writeFile(join(dir, 'config/run.json'), JSON.stringify(config));
  const [file, ...prefix] = command;
  if (file === undefined) throw new Error('runner bench: empty command');
  const args = [
    ...prefix,
    'run',
    '--op=apply',
    `--module-dir=${moduleDir}`,
    `--runtime=${tofu}`,
    `--config-dir=${join(dir, 'config')}`,
    `--work-dir=${join(dir, 'work')}`,
    `--result-file=${join(dir, 'result.json')}`,
  ];
  return timed(() => execFileSync(file, args, { stdio: 'pipe' }));
}

async function measure(name: string, once: () => Promise<number>): Promise<number> {
  await once(); // warm-up: page cache, first exec of each binary
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) samples.push(await once());
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  process.stdout.write(
    `${name.padEnd(34)} mean ${mean.toFixed(0).padStart(5)} ms  (${samples.map((s) => s.toFixed(0)).join(', ')})\n`,
  );
  return mean;
}

const seaDir = await mkdtemp(join(tmpdir(), 'captf-bench-sea-'));
const sea = join(seaDir, 'runner');
execFileSync(process.execPath, [join(root, 'src/runner/build-sea.ts'), sea], { stdio: 'pipe' });

const directMs = await measure('tofu commands directly', direct);
const devMs = await measure('runner (node src/runner/main.ts)', () =>
  viaRunner([process.execPath, join(root, 'src/runner/main.ts')]),
);
const seaMs = await measure('runner (single executable)', () => viaRunner([sea]));
for (const [name, ms] of [
  ['development runner', devMs],
  ['single executable', seaMs],
] as const) {
  process.stdout.write(
    `overhead, ${name}: ratio ${(ms / directMs).toFixed(2)} (runner/direct), +${(ms - directMs).toFixed(0)} ms per apply\n`,
  );
}
