import { Redis } from 'ioredis';
import { defineScripts } from './scripts.ts';

/**
 * The ioredis client under DESIGN.md section 13's rules: no offline queue, no resend of in-flight
 * commands after a reconnect, a command timeout below the call budget. So a call made while Redis is down
 * fails at once, and a call whose answer never came fails within the timeout, instead of waiting or being
 * replayed later behind the caller's back.
 */

export interface RedisClientOptions {
  /** `redis://host:port[/db]` (or `rediss://`). */
  url: string;
  /** Budget of one command, in ms; its outcome is "unknown" after that. Default 1000. */
  commandTimeoutMs?: number;
  /** Budget of establishing a connection, in ms. Default 2000. */
  connectTimeoutMs?: number;
  /** Receives connection errors (the calls themselves report theirs as "unknown"). */
  onError?: (error: Error) => void;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 1000;
const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
/** Reconnect delay cap: come back quickly after a Redis restart. */
const MAX_RECONNECT_DELAY_MS = 1000;

/** Creates a client (connecting in the background) with our scripts defined. */
export function createRedisClient(options: RedisClientOptions): Redis {
  const client = new Redis(options.url, {
    enableOfflineQueue: false,
    // 0: a command in flight when the connection drops fails at once instead of waiting for a reconnect.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    retryStrategy: (attempt: number) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
  });
  // Without a listener ioredis prints every connection error; the caller decides what to log.
  client.on('error', (error: Error) => options.onError?.(error));
  defineScripts(client);
  return client;
}

/**
 * Resolves once the client is connected and ready, or rejects after `timeoutMs` (the client keeps
 * reconnecting in the background either way).
 */
export function waitUntilReady(client: Redis, timeoutMs: number): Promise<void> {
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
