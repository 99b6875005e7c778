import { writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { RunnerResult, RunResult } from '../schemas/result.ts';
import { parseCommandLine, USAGE } from './cli.ts';
import { copySelf } from './copy.ts';
import { Interruption } from './interruption.ts';
import { RunnerLog } from './log.ts';
import { runOp } from './run.ts';

/**
 * The runner's entry point: `node src/runner/main.ts …` in development, the single executable in a Job.
 * The one place that turns outcomes into exit codes and the result file (STYLE.md habit 6).
 */

/**
 * Exit code per result (DESIGN.md section 10): 0 for a run that did what it was asked, applied or stopped at
 * a plan that waits for a person (`blocked`, `plan-changed`: a failed Job would set off every generic
 * failed-Job alert, kube-state-metrics' KubeJobFailed, for as long as it is kept); non-zero for a failure or
 * an interruption. Terraform's own code never leaks.
 */
export const RESULT_EXIT_CODES: Record<RunResult, number> = {
  succeeded: 0,
  failed: 1,
  interrupted: 3,
  blocked: 0,
  'plan-changed': 0,
};
/** A command line the runner does not understand: a Job builder bug; no result is written. */
const USAGE_EXIT_CODE = 2;
/** The result could not be written: bookkeeping will find no result and count the run as `unknown`. */
const RESULT_WRITE_EXIT_CODE = 6;

async function writeResult(path: string, result: RunnerResult, log: RunnerLog): Promise<boolean> {
  try {
    await writeFile(path, JSON.stringify(result));
    return true;
  } catch (cause) {
    log.error(`write result to ${path}: ${(cause as NodeJS.ErrnoException).code ?? 'failed'}`);
    return false;
  }
}

/** A bug in the runner: no result is written, so bookkeeping records kind `unknown` (DESIGN.md section 7). */
const INTERNAL_ERROR_EXIT_CODE = 7;

async function main(argv: readonly string[], log: RunnerLog): Promise<number> {
  const command = parseCommandLine(argv);
  switch (command.command) {
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case 'usage-error':
      process.stderr.write(`runner: ${command.message}\n${USAGE}`);
      return USAGE_EXIT_CODE;
    case 'copy': {
      const copied = await copySelf(command.dest, process.execPath);
      if (!copied.ok) {
        log.error(copied.message);
        return 1;
      }
      log.info(`copied the runner (${copied.files} files) to ${command.dest}`);
      return 0;
    }
    case 'run': {
      const interruption = new Interruption(command.options.stopTimeoutSeconds * 1000, (text) =>
        log.info(text),
      );
      for (const signal of ['SIGTERM', 'SIGINT'] as const)
        process.on(signal, () => interruption.request(signal));
      const result = await runOp(command.options, {
        log,
        interruption,
        nowMs: () => performance.now(),
        env: process.env,
      });
      const written = await writeResult(command.resultFile, result, log);
      return written ? RESULT_EXIT_CODES[result.result] : RESULT_WRITE_EXIT_CODE;
    }
  }
}

const log = new RunnerLog((stream, text) => process[stream].write(text));
// No top-level await: the single executable is bundled as CommonJS (Node SEA runs a CommonJS script).
main(process.argv.slice(2), log).then(
  (code) => {
    process.exitCode = code;
  },
  (cause: unknown) => {
    // Through the log, so the stack is redacted like every other line the runner prints.
    log.error(`internal error: ${cause instanceof Error ? (cause.stack ?? cause.message) : String(cause)}`);
    process.exitCode = INTERNAL_ERROR_EXIT_CODE;
  },
);
