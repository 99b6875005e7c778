import { isIP } from 'node:net';
import { type ConnectionOptions, connect } from 'node:tls';
import type { HostPort, RedisTopology } from './topology.ts';

/**
 * Why a TLS connection to Redis is refused, told by one handshake of our own. ioredis keeps the reason
 * from its Cluster and Sentinel callers (they report "Connection is closed." or "All sentinels are
 * unreachable"), so a wrong CA would read like an outage; this names the certificate problem instead.
 */

/** The address a topology's client connects to first: the node, the first seed node, the first sentinel. */
export function firstAddress(topology: RedisTopology): HostPort {
  switch (topology.kind) {
    case 'single': {
      const url = new URL(topology.url);
      return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 6379) };
    }
    case 'cluster':
      return topology.nodes[0] ?? { host: '127.0.0.1', port: 6379 };
    case 'sentinel':
      return topology.sentinels[0] ?? { host: '127.0.0.1', port: 26379 };
  }
}

/**
 * One TLS handshake with `address` under `options` (the client's own): undefined when it succeeds or the
 * address does not answer within `timeoutMs` (not a TLS problem), else `TLS to host:port: <why> (<code>)`.
 */
export function tlsHandshakeProblem(
  address: HostPort,
  options: ConnectionOptions,
  timeoutMs: number,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({
      ...options,
      host: address.host,
      port: address.port,
      // SNI takes a name only; an address is checked against the certificate's IP entries all the same.
      ...(isIP(address.host) === 0 ? { servername: address.host } : {}),
    });
    const done = (problem: string | undefined): void => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.once('secureConnect', () => done(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${address.host}:${address.port}`;
      const code = error.code === undefined ? '' : ` (${error.code})`;
      done(error.code === 'ECONNREFUSED' ? undefined : `TLS to ${where}: ${error.message}${code}`);
    });
  });
}
