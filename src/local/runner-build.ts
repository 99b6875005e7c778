import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * The runner's single executable for the local node (infra/local/images/README.md: the `runner` tool is
 * dist/runner/runner). Rebuilt when missing or older than any source it bundles, so a local run never
 * tests a runner that does not match the tree.
 */

const run = promisify(execFile);

/** Source directories bundled into the runner (src/runner/build-sea.ts bundles src/runner/main.ts). */
const RUNNER_SOURCES = ['src/runner', 'src/schemas'];

/** Newest modification time (ms) of the `.ts` files under `dir`, recursively; 0 when there are none. */
function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMs(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Why the runner needs a build, or undefined when dist/runner/runner is current. */
export function runnerBuildReason(repoRoot: string): string | undefined {
  let builtMs: number;
  try {
    builtMs = statSync(join(repoRoot, 'dist', 'runner', 'runner')).mtimeMs;
  } catch {
    return 'dist/runner/runner is missing';
  }
  const sourceMs = Math.max(...RUNNER_SOURCES.map((dir) => newestSourceMs(join(repoRoot, dir))));
  return sourceMs > builtMs ? 'dist/runner/runner is older than its sources' : undefined;
}

/**
 * Builds the runner with `npm run build:runner`'s script when it is missing or stale.
 * Throws with the build's stderr when the build fails.
 */
export async function ensureRunnerBuilt(repoRoot: string, log: (line: string) => void): Promise<void> {
  const reason = runnerBuildReason(repoRoot);
  if (reason === undefined) return;
  log(`building the runner (${reason})`);
  try {
    await run(process.execPath, [join(repoRoot, 'src', 'runner', 'build-sea.ts')], {
      cwd: repoRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`build runner: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
}
