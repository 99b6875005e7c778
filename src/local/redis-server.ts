import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from './process.ts';

/** A running redis-server on loopback without persistence. */
export interface LocalRedis {
  url: string;
  port: number;
  process: ManagedProcess;
  stop(): Promise<void>;
}

/**
 * Sends PING over a raw socket; true on `+PONG`, or on `-NOAUTH` from a server started with a password
 * (it answers, which is all the health check asks).
 */
export function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(1000);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      socket.destroy();
      const answer = data.toString();
      resolve(answer.startsWith('+PONG') || answer.startsWith('-NOAUTH'));
    });
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * Starts Debian's `redis-server` on a free (or the given) loopback port with no persistence and
 * `maxmemory-policy noeviction` (DESIGN.md section 8); `args` adds settings (a Cluster node's, a replica's,
 * a sentinel's).
 * Throws with the log tail if it does not answer PING.
 */
export async function startRedis(options: {
  workDir: string;
  port?: number;
  name?: string;
  args?: string[];
  /** A configuration file read first (a sentinel's, which the sentinel rewrites). */
  config?: string;
}): Promise<LocalRedis> {
  const logs = join(options.workDir, 'logs');
  mkdirSync(logs, { recursive: true });
  const port = options.port ?? (await freePort());
  const proc = startProcess(
    options.name ?? 'redis-server',
    'redis-server',
    [
      ...(options.config === undefined ? [] : [options.config]),
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--protected-mode',
      'yes',
      ...(options.args ?? []),
    ],
    logs,
  );
  await waitUntilHealthy(proc, 'answering PING', () => ping(port), 15_000, 50);
  return { url: `redis://127.0.0.1:${port}`, port, process: proc, stop: () => proc.stop() };
}
