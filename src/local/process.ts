import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const SETPRIV = '/usr/bin/setpriv';

/** A long-running child process of the local stack, with its output in `<logDir>/<name>.log`. */
export interface ManagedProcess {
  name: string;
  pid: number;
  logPath: string;
  /** Resolves when the process has exited (with its code or signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after `graceMs` milliseconds. Resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once: a crash, or a process whose SIGTERM waits too long. Resolves once it is gone. */
  kill(): Promise<void>;
  /** The last `lines` lines of the log, for error messages. */
  tail(lines?: number): string;
}

/** A managed process that exited while nothing had asked it to stop: a crash, or a kill from outside. */
export interface UnexpectedExit {
  name: string;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  logPath: string;
  /** The last lines of its log. */
  tail: string;
}

const unexpectedExitListeners = new Set<(exit: UnexpectedExit) => void>();

/**
 * Calls `listener` for every managed process of this Node process that exits before its `stop()` or
 * `kill()` was called (the local run says so at once, instead of running on degraded and silent: a Redis
 * killed from outside left only the handlers' 503s). Returns the unsubscribe.
 */
export function onUnexpectedExit(listener: (exit: UnexpectedExit) => void): () => void {
  unexpectedExitListeners.add(listener);
  return () => {
    unexpectedExitListeners.delete(listener);
  };
}

/**
 * Starts `command args` (in `cwd`, default this process's) with stdout and stderr appended to a log file.
 * Throws if it cannot be spawned. An exit before `stop()` or `kill()` is reported to the
 * {@link onUnexpectedExit} listeners.
 */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logDir: string,
  env?: NodeJS.ProcessEnv,
  cwd?: string,
): ManagedProcess {
  const logPath = join(logDir, `${name}.log`);
  const log = createWriteStream(logPath, { flags: 'a' });
  // setpriv (util-linux) execs the command with a parent-death signal, so a test run or main job that is
  // killed outright does not leave etcd, the API server or Redis running behind it.
  const [file, argv] = existsSync(SETPRIV)
    ? [SETPRIV, ['--pdeathsig', 'SIGTERM', '--', command, ...args]]
    : [command, args];
  // A process group of its own: a terminal's Ctrl-C signals the whole foreground group, and the children
  // would then stop at once, all together, while the local run's ordered stop still needs them (the API
  // server first removes the webhook configurations, the handlers finish their steps against it): each
  // would wait out its grace period against a control plane already gone. The parent's stop reaches them
  // in order; a parent killed outright still takes them with it (the parent-death signal above, and
  // exit-with-parent.ts for node children).
  const child: ChildProcess = spawn(file, argv, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: env ?? process.env,
    ...(cwd === undefined ? {} : { cwd }),
  });
  // Two sources share one log: neither may end it (the first to reach its end would, and the other's last
  // chunk would then be written after the end, an uncaught error). The log ends on 'close', which comes
  // after both pipes have drained; 'exit' may come before their last data.
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  // The log holds all the child wrote once it has finished: a crash report reads its tail only then.
  const logFinished = new Promise<void>((resolve) => {
    log.once('finish', resolve);
    log.once('error', () => resolve());
  });
  child.on('close', () => log.end());
  if (child.pid === undefined) throw new Error(`start ${name}: could not spawn ${command}`);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', () => resolve({ code: -1, signal: null }));
  });
  let running = true;
  let asked = false;
  const tail = (lines = 40): string => {
    try {
      return readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  };
  const pid = child.pid;
  void exited.then(async ({ code, signal }) => {
    running = false;
    if (asked) return;
    // Its last words (a panic, a fatal error) may still be in the pipes when 'exit' comes.
    await Promise.race([logFinished, sleep(1000)]);
    const exit = { name, pid, code, signal, logPath, tail: tail(5) };
    for (const listener of unexpectedExitListeners) listener(exit);
  });
  const stop = async (graceMs = 5000): Promise<void> => {
    asked = true;
    if (!running) return;
    child.kill('SIGTERM');
    const outcome = await Promise.race([
      exited.then(() => 'exited' as const),
      sleep(graceMs).then(() => 'timeout' as const),
    ]);
    if (outcome === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  };
  const kill = async (): Promise<void> => {
    asked = true;
    if (!running) return;
    child.kill('SIGKILL');
    await exited;
  };
  return { name, pid, logPath, exited, stop, kill, tail };
}

/**
 * Polls `probe` every `intervalMs` until it returns true, the process exits, or `timeoutMs` passes.
 * Throws an Error with the process's log tail on failure: a health wait, never a blind sleep.
 */
export async function waitUntilHealthy(
  proc: ManagedProcess,
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitedEarly = false;
  void proc.exited.then(() => {
    exitedEarly = true;
  });
  while (Date.now() < deadline) {
    if (exitedEarly)
      throw new Error(`start ${proc.name}: exited before ${what}; log ${proc.logPath}:\n${proc.tail()}`);
    if (await probe().catch(() => false)) return;
    await sleep(intervalMs);
  }
  throw new Error(
    `start ${proc.name}: not ${what} after ${timeoutMs} ms; log ${proc.logPath}:\n${proc.tail()}`,
  );
}
