import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseRunnerResult, type RunnerResult } from '../../../src/schemas/result.ts';
import { RUN_CONFIG_FILE, type RunConfigInput } from '../../../src/schemas/run-config.ts';
import { testStack } from '../../env/index.ts';
import { testTempDir } from '../../env/temp-dir.ts';

/**
 * Runs the runner as a process, the way a Job does, against the real tofu binary: one temp dir per run
 * with the config dir (`run.json`), the work dir and the result file. Tests read the result document the
 * way bookkeeping does (parseRunnerResult) and the runner's own output.
 */

const repoRoot = resolve(import.meta.dirname, '../../..');
export const FIXTURES = join(repoRoot, 'test/fixtures/modules');
const MAIN = join(repoRoot, 'src/runner/main.ts');

/** A plan HMAC key for tests (the controller generates one per object). */
export const TEST_HMAC_KEY = 'captf-test-hmac-key-0123456789abcdef';

/** The tofu binary of the test stack; throws (never skips) when it is missing. */
export async function tofuPath(): Promise<string> {
  const path = testStack().tofuPath;
  await access(path, constants.X_OK).catch((cause: Error) => {
    throw new Error(`tofu for tests: ${path} is missing; run scripts/build-binaries.sh tofu`, { cause });
  });
  return path;
}

/** A kubernetes backend on the test API server with its own state Secret and lock Lease. */
export function kubernetesBackend(suffix: string): NonNullable<RunConfigInput['backend']> {
  return {
    type: 'kubernetes',
    config: { config_path: testStack().kubeconfigPath, namespace: 'default', secret_suffix: suffix },
  };
}

/** A local backend whose state file outlives the run's work dir. */
export function localBackend(statePath: string): NonNullable<RunConfigInput['backend']> {
  return { type: 'local', config: { path: statePath } };
}

/** One runner invocation. */
export interface RunnerCall {
  /** `run` flags, e.g. `['--op=apply']`; the paths are added unless given. */
  flags: string[];
  /** Fixture module name under test/fixtures/modules, or an absolute path. */
  module: string;
  config: Omit<RunConfigInput, 'version' | 'planHmacKey'> & { planHmacKey?: string };
  /** Runtime binary; defaults to the test stack's tofu. */
  runtime?: string;
  /** Command to run instead of `node src/runner/main.ts` (the bundled executable). */
  command?: string[];
  /** Put the runner in its own process group, so a test can kill it and its children at once. */
  detached?: boolean;
  /** Variables added to the test's own environment (say `KUBERNETES_SERVICE_HOST`). */
  env?: Record<string, string>;
}

/** A finished run. */
export interface RunnerRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  resultText: string;
  result: RunnerResult;
  dir: string;
}

/** A started run: the process and a promise of its end. */
export interface StartedRun {
  child: ChildProcess;
  dir: string;
  /** Everything the runner printed so far (stdout, then stderr). */
  output: () => string;
  done: Promise<RunnerRun>;
}

/** Writes the config dir and starts the runner; does not wait. */
export async function startRunner(call: RunnerCall): Promise<StartedRun> {
  const dir = testTempDir('captf-runner-test-');
  const configDir = join(dir, 'config');
  await mkdir(configDir);
  const config: RunConfigInput = { version: 1, planHmacKey: TEST_HMAC_KEY, ...call.config };
  await writeFile(join(configDir, RUN_CONFIG_FILE), JSON.stringify(config));
  const moduleDir = call.module.startsWith('/') ? call.module : join(FIXTURES, call.module);
  const resultFile = join(dir, 'termination-log');
  const flags = [
    `--module-dir=${moduleDir}`,
    `--runtime=${call.runtime ?? (await tofuPath())}`,
    `--config-dir=${configDir}`,
    `--work-dir=${join(dir, 'work')}`,
    `--result-file=${resultFile}`,
    ...call.flags,
  ];
  const [file, ...prefix] = call.command ?? [process.execPath, MAIN];
  if (file === undefined) throw new Error('start runner: empty command');
  const child = spawn(file, [...prefix, 'run', ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: call.detached ?? false,
    env: { ...process.env, ...call.env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const done = new Promise<RunnerRun>((resolveRun, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode, signal) => {
      readFile(resultFile, 'utf8')
        .catch(() => '')
        .then((resultText) => {
          const parsed = parseRunnerResult(resultText);
          if (!parsed.ok) {
            reject(new Error(`runner result: ${parsed.message}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
            return;
          }
          resolveRun({ exitCode, signal, stdout, stderr, resultText, result: parsed.result, dir });
        }, reject);
    });
  });
  return { child, dir, output: () => `${stdout}${stderr}`, done };
}

/** Runs the runner to its end. */
export async function runRunner(call: RunnerCall): Promise<RunnerRun> {
  return (await startRunner(call)).done;
}

/** Step names of a result, in order. */
export function stepNames(result: RunnerResult): string[] {
  return result.steps.map((s) => s.name);
}

/** Resolves once `predicate` holds for the run's output so far, polling every 100 ms; throws after `ms`. */
export async function waitForOutput(
  read: () => string,
  predicate: (text: string) => boolean,
  ms: number,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate(read())) {
    if (Date.now() > deadline) throw new Error(`output did not arrive within ${ms} ms:\n${read()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
