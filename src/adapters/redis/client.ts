import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { defineScripts } from './scripts.ts';
import { firstAddress, tlsHandshakeProblem } from './tls-probe.ts';
import type { RedisTopology } from './topology.ts';

/**
 * The ioredis client under DESIGN.md section 13's rules, the same on one node, a Redis Cluster and behind
 * Sentinel: no offline queue, no resend of in-flight commands after a reconnect, a command timeout below the
 * call budget. So a call made while Redis is down (or while a Cluster or Sentinel failover is under way)
 * fails at once, and a call whose answer never came fails within the timeout, instead of waiting or being
 * replayed later behind the caller's back.
 */

/** A client of any topology; both classes carry the same command methods. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: one node by URL (the common case and the tests' shorthand), or any topology. */
export type RedisEndpoint = { url: string } | { topology: RedisTopology };

export type RedisClientOptions = RedisEndpoint & {
  /** Budget of one command, in ms; its outcome is "unknown" after that. Default 1000. */
  commandTimeoutMs?: number;
  /** Budget of establishing a connection, in ms. Default 2000. */
  connectTimeoutMs?: number;
  /** Receives connection errors (the calls themselves report theirs as "unknown"). */
  onError?: (error: Error) => void;
};

export const DEFAULT_COMMAND_TIMEOUT_MS = 1000;
const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
/** Reconnect delay cap: come back quickly after a Redis restart or failover. */
const MAX_RECONNECT_DELAY_MS = 1000;

const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS);

/** The topology of an endpoint. */
export function topologyOf(endpoint: RedisEndpoint): RedisTopology {
  return 'topology' in endpoint ? endpoint.topology : { kind: 'single', url: endpoint.url };
}

/** Clients closed by `closeRedisClient`: the only ones allowed to stay ended. */
const closedByUs = new WeakSet<RedisClient>();

/** The newest connection error of each client, for `waitUntilReady`'s message. */
const lastErrors = new WeakMap<RedisClient, Error>();

/** Each TLS client's handshake check (src/adapters/redis/tls-probe.ts), for `waitUntilReady`'s message. */
const tlsChecks = new WeakMap<RedisClient, () => Promise<string | undefined>>();

/** Budget of that handshake, ms: on top of the caller's wait, once, when Redis was not reached. */
const TLS_CHECK_TIMEOUT_MS = 1000;

/**
 * Creates a client (connecting in the background) with our scripts defined. The client never stays ended
 * unless `closeRedisClient` closed it: ioredis gives up on a connection for good in some races (see
 * `reviveWhenEnded`), and a handler instance whose client gave up would answer 503 until it is recycled.
 */
export function createRedisClient(options: RedisClientOptions): RedisClient {
  const topology = topologyOf(options);
  // Every connection, whichever topology it belongs to.
  const connection: RedisOptions = {
    // AUTH on every connection to a data node (a Cluster's nodes, Sentinel's master). Not the sentinels'.
    ...topology.credentials,
    // 0: a command in flight when the connection drops fails at once instead of waiting for a reconnect.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    ...(topology.tls === undefined ? {} : { tls: tlsOptions(topology.tls) }),
  };
  const client = clientOf(topology, connection);
  const tls = connection.tls;
  if (tls !== undefined)
    tlsChecks.set(client, () => tlsHandshakeProblem(firstAddress(topology), tls, TLS_CHECK_TIMEOUT_MS));
  // Without a listener ioredis prints every connection error; the caller decides what to log.
  client.on('error', (error: Error) => {
    lastErrors.set(client, error);
    options.onError?.(error);
  });
  reviveWhenEnded(client);
  defineScripts(client);
  return client;
}

/** Closes a client for good (it is not revived). */
export function closeRedisClient(client: RedisClient): void {
  closedByUs.add(client);
  client.disconnect();
}

/**
 * Connects again, after the reconnect delay cap, a client that ended without `closeRedisClient`. ioredis
 * ends a client when a connection attempt is cut from outside: with ioredis 6.0.0's Sentinel failover
 * detector, a `+switch-master` that arrives while a reconnect is asking a sentinel where the master is ends
 * the client, and its retry strategy is never asked again (seen in a failover under load; the Sentinel
 * test in test/integration/adapters/redis-failover.test.ts reproduces it).
 */
function reviveWhenEnded(client: RedisClient): void {
  client.on('end', () => {
    if (closedByUs.has(client)) return;
    const timer = setTimeout(() => {
      if (closedByUs.has(client) || client.status !== 'end') return;
      // A failed connect is reported through 'error' and ends the client again, which comes back here.
      client.connect().catch(() => undefined);
    }, MAX_RECONNECT_DELAY_MS);
    timer.unref();
  });
}

/**
 * Node's TLS options for a topology's `tls`: its CA instead of the bundled roots. Node checks the chain and
 * that the certificate names the host connected to; nothing here turns either check off.
 */
function tlsOptions(tls: NonNullable<RedisTopology['tls']>): ConnectionOptions {
  return tls.ca === undefined ? {} : { ca: tls.ca };
}

function clientOf(topology: RedisTopology, connection: RedisOptions): RedisClient {
  switch (topology.kind) {
    case 'single':
      return new Redis(topology.url, {
        ...connection,
        enableOfflineQueue: false,
        retryStrategy: reconnectDelay,
      });
    case 'sentinel':
      return new Redis({
        ...connection,
        enableOfflineQueue: false,
        retryStrategy: reconnectDelay,
        sentinels: topology.sentinels,
        // TLS to the sentinels too: they hand out the master's address, so they are as trusted as it.
        ...(connection.tls === undefined
          ? {}
          : { sentinelTLS: connection.tls, enableTLSForSentinelMode: true }),
        name: topology.masterName,
        role: 'master',
        sentinelRetryStrategy: reconnectDelay,
        sentinelCommandTimeout: connection.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT_MS,
        // No failover detector: in ioredis 6.0.0 its `+switch-master` cuts a reconnect that is asking a
        // sentinel for the master and ends the client (see `reviveWhenEnded`). A killed master closes the
        // connection anyway, and the reconnect asks the sentinels again; a master demoted while it stays
        // up answers writes READONLY, which reconnects (1: without resending the refused command).
        failoverDetector: false,
        reconnectOnError: (error: Error) => (error.message.startsWith('READONLY') ? 1 : false),
      });
    case 'cluster':
      return new Cluster(topology.nodes, {
        enableOfflineQueue: false,
        redisOptions: connection,
        clusterRetryStrategy: reconnectDelay,
        // ioredis resolves a seed node's name to an address before it connects, and the certificate would
        // then be checked against the address; with TLS it connects by the name given, as the certificate
        // names it (ioredis's README, "AWS ElastiCache Clusters with TLS").
        ...(connection.tls === undefined
          ? {}
          : {
              dnsLookup: (address: string, callback: (error: null, address: string) => void) =>
                callback(null, address),
            }),
        // By default ioredis resends a command on a timer after a closed connection (it may have run) or
        // CLUSTERDOWN (a failover under way), and the resend may land after the caller gave up on it. 0
        // turns both off: the call fails at once ("unknown", so 503 with Retry-After) and the caller's retry
        // is the only one. MOVED, ASK and TRYAGAIN mean the node did not run the command; they are followed
        // at once (TRYAGAIN on the next tick instead of 100 ms later), at most maxRedirections times.
        retryDelayOnFailover: 0,
        retryDelayOnClusterDown: 0,
        retryDelayOnTryAgain: 0,
      });
  }
}

/**
 * Resolves once the client is connected and ready, or rejects after `timeoutMs` (the client keeps
 * reconnecting in the background either way) with the newest connection error in the message, and with
 * TLS what a handshake of our own says (up to 1 s more): a refused certificate or AUTH reads there, not
 * only in the debug log.
 */
export function waitUntilReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(async () => {
      client.off('ready', onReady);
      const last = lastErrors.get(client);
      const tlsProblem = await tlsChecks.get(client)?.();
      const causes = [
        ...(last === undefined ? [] : [`last error: ${describeError(last)}`]),
        ...(tlsProblem === undefined ? [] : [tlsProblem]),
      ];
      reject(
        new Error(
          `connect to Redis: not ready within ${timeoutMs} ms (status ${[client.status, ...causes].join('; ')})`,
          last === undefined ? {} : { cause: last },
        ),
      );
    }, timeoutMs);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}

/**
 * A connection error in one line: its message, and Node's code when the message does not hold it (a TLS
 * refusal's `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `ERR_TLS_CERT_ALTNAME_INVALID`, …). ioredis wraps a
 * Cluster's or Sentinel's failures; the node's own error is then in `lastNodeError` or the message.
 */
function describeError(error: Error): string {
  const inner = (error as Error & { lastNodeError?: Error }).lastNodeError;
  const code = (error as NodeJS.ErrnoException).code;
  const own =
    code === undefined || error.message.includes(code) ? error.message : `${error.message} (${code})`;
  return inner === undefined ? own : `${own}: ${describeError(inner)}`;
}
