import { mkdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from './process.ts';

/** A running redis-server on loopback without persistence. */
export interface LocalRedis {
  /** `redis://127.0.0.1:<port>`, or `rediss://` when it speaks TLS only. */
  url: string;
  port: number;
  process: ManagedProcess;
  stop(): Promise<void>;
}

/**
 * TLS of a local server: its certificate and key (src/local/certificates.ts, `LOOPBACK_PEER_EXTENSIONS`:
 * the same certificate is the client's on its Cluster bus and replication links), and the CA it checks its
 * peers' certificates against. Clients are not asked for a certificate (`tls-auth-clients no`): the
 * controller's clients trust a CA and authenticate with AUTH, not with a certificate of their own.
 */
export interface LocalRedisTls {
  certPath: string;
  keyPath: string;
  caPath: string;
}

/** The redis-server arguments of a TLS-only server on `port`: `--port 0` opens no plaintext port. */
export function tlsServerArgs(port: number, tls: LocalRedisTls): string[] {
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    tls.certPath,
    '--tls-key-file',
    tls.keyPath,
    '--tls-ca-cert-file',
    tls.caPath,
    '--tls-auth-clients',
    'no',
    // A replica's link to its master, and a sentinel's to the data nodes, over TLS as well.
    '--tls-replication',
    'yes',
  ];
}

/**
 * Sends PING over a raw socket (TLS with `tls`, checking the server's certificate against its CA); true on
 * `+PONG`, or on `-NOAUTH` from a server started with a password (it answers, which is all the health
 * check asks).
 */
export function ping(port: number, tls?: LocalRedisTls): Promise<boolean> {
  return new Promise((resolve) => {
    const socket =
      tls === undefined
        ? connect(port, '127.0.0.1')
        : connectTls({ port, host: '127.0.0.1', ca: readFileSync(tls.caPath) });
    socket.setTimeout(1000);
    socket.on(tls === undefined ? 'connect' : 'secureConnect', () => socket.write('PING\r\n'));
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
 * a sentinel's). With `tls` the port speaks TLS only and no plaintext port is open.
 * Throws with the log tail if it does not answer PING.
 */
export async function startRedis(options: {
  workDir: string;
  port?: number;
  name?: string;
  args?: string[];
  /** A configuration file read first (a sentinel's, which the sentinel rewrites). */
  config?: string;
  tls?: LocalRedisTls;
}): Promise<LocalRedis> {
  const logs = join(options.workDir, 'logs');
  mkdirSync(logs, { recursive: true });
  const port = options.port ?? (await freePort());
  const proc = startProcess(
    options.name ?? 'redis-server',
    'redis-server',
    [
      ...(options.config === undefined ? [] : [options.config]),
      ...(options.tls === undefined ? ['--port', String(port)] : tlsServerArgs(port, options.tls)),
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
  await waitUntilHealthy(proc, 'answering PING', () => ping(port, options.tls), 15_000, 50);
  const scheme = options.tls === undefined ? 'redis' : 'rediss';
  return { url: `${scheme}://127.0.0.1:${port}`, port, process: proc, stop: () => proc.stop() };
}
