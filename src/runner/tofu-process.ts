import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Runs one Terraform/OpenTofu process and hands back its exit status and output (the imperative shell of
 * a step). Output lines are passed to `onLine` as they arrive, so the runner's log shows progress live.
 */

/** How a process ended. */
export type ProcessEnd =
  | { kind: 'exited'; exit: number; stdout: string }
  /** Killed by a signal (the stop timeout ran out after an interrupt). */
  | { kind: 'signaled'; signal: string; stdout: string }
  /** Could not be started; `code` is the errno name (ENOENT, EACCES, ENOEXEC, …). */
  | { kind: 'not-started'; code: string };

/** One process invocation. */
export interface ProcessSpec {
  file: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Called with each complete line of stdout and stderr. */
  onLine: (stream: 'stdout' | 'stderr', line: string) => void;
  /** Called once the process runs, so an interruption can reach it. */
  onStart: (child: ChildProcess) => void;
}

/** Starts the process and resolves when it ends and its output streams are drained; never rejects. */
export function runProcess(spec: ProcessSpec): Promise<ProcessEnd> {
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(spec.file, spec.args, {
        cwd: spec.cwd,
        env: spec.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (cause) {
      resolve({ kind: 'not-started', code: (cause as NodeJS.ErrnoException).code ?? 'UNKNOWN' });
      return;
    }
    const stdoutLines: string[] = [];
    let open = 2;
    let ended: { exit: number | null; signal: NodeJS.Signals | null } | undefined;
    let startError: NodeJS.ErrnoException | undefined;
    const finish = () => {
      if (open > 0 || (ended === undefined && startError === undefined)) return;
      if (startError !== undefined) {
        resolve({ kind: 'not-started', code: startError.code ?? 'UNKNOWN' });
        return;
      }
      const stdout = stdoutLines.join('\n');
      if (ended?.exit !== null && ended?.exit !== undefined)
        resolve({ kind: 'exited', exit: ended.exit, stdout });
      else resolve({ kind: 'signaled', signal: ended?.signal ?? 'UNKNOWN', stdout });
    };
    for (const [stream, source] of [
      ['stdout', child.stdout],
      ['stderr', child.stderr],
    ] as const) {
      if (source === null) {
        open -= 1;
        continue;
      }
      const lines = createInterface({ input: source, crlfDelay: Number.POSITIVE_INFINITY });
      lines.on('line', (line) => {
        if (stream === 'stdout') stdoutLines.push(line);
        spec.onLine(stream, line);
      });
      lines.on('close', () => {
        open -= 1;
        finish();
      });
    }
    child.once('error', (error: NodeJS.ErrnoException) => {
      // A spawn failure closes the pipes without an exit event.
      startError = error;
      finish();
    });
    child.once('spawn', () => spec.onStart(child));
    child.once('exit', (exit, signal) => {
      ended = { exit, signal };
      finish();
    });
  });
}
