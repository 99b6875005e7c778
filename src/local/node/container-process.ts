import { spawn, spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * A container as a local process. It runs in its own process group, standing in for the container's PID
 * namespace: SIGTERM goes to the main process only (what a runtime sends to PID 1), SIGKILL and the end of
 * the main process take the whole group down (a runtime tears the namespace down). With a UTS namespace
 * (`unshare`, needs root) the process sees the pod's hostname, which Terraform records as the state lock
 * holder (DESIGN.md section 12).
 */

/** How a container process ended: its exit code, or 128 + signal number when a signal killed it. */
export interface ContainerExit {
  exitCode: number;
  /** The signal number when a signal ended the process. */
  signal?: number;
}

/** A started container process. */
export interface ContainerProcess {
  pid: number;
  exited: Promise<ContainerExit>;
  /** Sends SIGTERM to the main process (the runtime's stop signal). */
  terminate(): void;
  /** Sends SIGKILL to every process of the container. */
  kill(): void;
}

/** Where `command` resolves, or the runtime's start error message (containerd wording). */
export type ExecutableLookup = { kind: 'found'; path: string } | { kind: 'missing'; message: string };

/** Resolves `command` like `execve` via PATH (`command` without a slash is searched in `pathVariable`). */
export function findExecutable(command: string, pathVariable: string, cwd: string): ExecutableLookup {
  const executable = (path: string): boolean => {
    try {
      accessSync(path, constants.X_OK);
      return statSync(path).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/')) {
    const path = isAbsolute(command) ? command : join(cwd, command);
    return executable(path)
      ? { kind: 'found', path }
      : {
          kind: 'missing',
          message: `exec: "${command}": stat ${path}: no such file or directory or not executable`,
        };
  }
  for (const dir of pathVariable.split(':')) {
    if (dir && executable(join(dir, command))) return { kind: 'found', path: join(dir, command) };
  }
  return { kind: 'missing', message: `exec: "${command}": executable file not found in $PATH` };
}

/** True when this process may create UTS namespaces (`unshare --uts` works). Probed once at node start. */
export function canSetHostname(): boolean {
  const probe = spawnSync('unshare', ['--uts', '--', 'true'], { stdio: 'ignore', timeout: 5000 });
  return probe.status === 0;
}

// Sets the hostname inside the fresh UTS namespace, then replaces itself with the container command, so
// the container's main process keeps the pid we signal.
const setHostnameThenExec = 'printf %s "$0" > /proc/sys/kernel/hostname && exec "$@"';

/**
 * Starts `argv` (argv[0] already resolved to a host path) with exactly `env`, in `cwd`, stdout and stderr
 * appended to `logPath`. `hostname` set: run inside a new UTS namespace with that hostname.
 * Throws when the process cannot be spawned at all.
 */
export function startContainerProcess(input: {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  logPath: string;
  hostname: string | undefined;
}): ContainerProcess {
  const [file, ...args] = input.argv;
  if (file === undefined) throw new Error('start container: empty command');
  const log = openSync(input.logPath, 'a');
  const wrapped =
    input.hostname === undefined
      ? { file, args }
      : {
          file: 'unshare',
          args: ['--uts', '--', '/bin/sh', '-c', setHostnameThenExec, input.hostname, file, ...args],
        };
  const child = spawn(wrapped.file, wrapped.args, {
    cwd: input.cwd,
    env: input.env,
    stdio: ['ignore', log, log],
    detached: true,
  });
  closeSync(log);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`start container: could not spawn ${file}`);
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  const exited = new Promise<ContainerExit>((resolve) => {
    child.on('exit', (code, signal) => {
      // The runtime kills what the main process left behind when the container ends.
      signalGroup('SIGKILL');
      if (signal) {
        const number = osConstants.signals[signal];
        resolve({ exitCode: 128 + number, signal: number });
      } else resolve({ exitCode: code ?? 128 });
    });
    child.on('error', () => resolve({ exitCode: 128 }));
  });
  return {
    pid,
    exited,
    terminate: () => {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Already exited.
      }
    },
    kill: () => signalGroup('SIGKILL'),
  };
}
