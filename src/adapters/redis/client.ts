import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { defineScripts } from './scripts.ts';
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

/** Creates a client (connecting in the background) with our scripts defined. */
export function createRedisClient(options: RedisClientOptions): RedisClient {
  const topology = topologyOf(options);
  // Every connection, whichever topology it belongs to.
  const connection: RedisOptions = {
    // 0: a command in flight when the connection drops fails at once instead of waiting for a reconnect.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  };
  const client = clientOf(topology, connection);
  // Without a listener ioredis prints every connection error; the caller decides what to log.
  client.on('error', (error: Error) => options.onError?.(error));
  defineScripts(client);
  return client;
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
        name: topology.masterName,
        role: 'master',
        sentinelRetryStrategy: reconnectDelay,
        sentinelCommandTimeout: connection.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT_MS,
        // Sentinel's +switch-master moves the client to the promoted replica without waiting for an error.
        failoverDetector: true,
      });
    case 'cluster':
      return new Cluster(topology.nodes, {
        enableOfflineQueue: false,
        redisOptions: connection,
        clusterRetryStrategy: reconnectDelay,
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
 * reconnecting in the background either way).
 */
export function waitUntilReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`connect to Redis: not ready within ${timeoutMs} ms (status ${client.status})`));
    }, timeoutMs);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}
