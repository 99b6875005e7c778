import { z } from 'zod';
import { type KubeConfigSource, kubeConfigSourceOf } from '../adapters/kube/config-source.ts';
import { REDIS_ENV_SHAPE, type RedisTopology, redisTopologyOf } from '../adapters/redis/topology.ts';
import type { WatchNamespaces } from '../core/watch-scope.ts';
import { WatchNamespacesEnv } from '../schemas/watch-namespaces.ts';
import type { RelayWatch } from './resources.ts';

/**
 * The relay process's configuration (functions/relay.ts), read once from the environment and validated
 * (STYLE.md habit 7). The relay needs no step settings: it watches, sends and ticks.
 */
const RelayEnvSchema = z
  .object({
    /** Base URL of the handlers, e.g. `http://127.0.0.1:8080`. */
    CAPTF_HANDLER_URL: z.url({ protocol: /^https?$/, error: 'CAPTF_HANDLER_URL: must be an http(s) URL' }),
    CAPTF_AUTH_TOKEN: z.string().min(32, 'CAPTF_AUTH_TOKEN: at least 32 characters').optional(),
    CAPTF_AUTH_DISABLED: z.enum(['true', 'false']).default('false'),
    /** Redis of the relay lease: one node, a Redis Cluster or Sentinel, as the handlers'. */
    ...REDIS_ENV_SHAPE,
    KUBECONFIG: z.string().min(1).optional(),
    /** The handlers' namespaces (src/core/watch-scope.ts): watched one by one; absent: all. */
    CAPTF_WATCH_NAMESPACES: WatchNamespacesEnv,
    CAPTF_KEY_PREFIX: z
      .string()
      .regex(/^[a-z0-9-]{1,32}$/)
      .default('captf'),
    /**
     * `resource` (the default, like the shipped ApiServerSource's Resource mode: the event carries the
     * object, so one that changes nothing costs no read) or `ref` (ApiServerSource's Reference mode).
     */
    CAPTF_RELAY_MODE: z.enum(['ref', 'resource']).default('resource'),
    /**
     * What this relay watches (src/relay/resources.ts): our objects and what drives them, the Secrets a wait
     * depends on (a relay under their own identity), or both.
     */
    CAPTF_RELAY_WATCH: z.enum(['all', 'objects', 'secrets']).default('objects'),
    /** Relay lease TTL, ms: how long a dead relay blocks its successor. */
    CAPTF_RELAY_LEASE_TTL_MS: z.coerce.number().int().min(1000).default(15_000),
    /** Local timer interval, ms; 0 disables the timer (a PingSource or cron calls /tick instead). */
    CAPTF_TICK_INTERVAL_MS: z.coerce.number().int().min(0).default(10_000),
    /** Per-call timeout of the timer, ms: above the handlers' tick budget. */
    CAPTF_TICK_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
    HOSTNAME: z.string().min(1).default('relay'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .refine((env) => env.CAPTF_AUTH_DISABLED === 'true' || env.CAPTF_AUTH_TOKEN !== undefined, {
    message: 'CAPTF_AUTH_TOKEN: required unless CAPTF_AUTH_DISABLED=true',
    path: ['CAPTF_AUTH_TOKEN'],
  });

export interface RelayConfig {
  eventsUrl: string;
  tickUrl: string;
  token: string | undefined;
  redis: RedisTopology;
  kube: KubeConfigSource;
  /** Namespaces watched; empty: all. */
  watchNamespaces: WatchNamespaces;
  keyPrefix: string;
  mode: 'ref' | 'resource';
  watch: RelayWatch;
  leaseTtlMs: number;
  tickIntervalMs: number;
  tickTimeoutMs: number;
  holder: string;
  logLevel: string;
}

/** Reads the relay configuration; every invalid variable in one message. */
export function readRelayConfig(
  env: Record<string, string | undefined>,
): { ok: true; config: RelayConfig } | { ok: false; message: string } {
  const parsed = RelayEnvSchema.safeParse(env);
  if (!parsed.success) {
    return {
      ok: false,
      message: `read relay config: ${parsed.error.issues
        .map((issue) => {
          const name = issue.path.join('.');
          return issue.message.startsWith(`${name}:`) ? issue.message : `${name}: ${issue.message}`;
        })
        .join('\n')}`,
    };
  }
  const e = parsed.data;
  const redis = redisTopologyOf(e);
  if (!redis.ok) return { ok: false, message: `read relay config: ${redis.problems.join('\n')}` };
  const base = e.CAPTF_HANDLER_URL.replace(/\/+$/, '');
  return {
    ok: true,
    config: {
      eventsUrl: `${base}/events`,
      tickUrl: `${base}/tick`,
      token: e.CAPTF_AUTH_DISABLED === 'true' ? undefined : e.CAPTF_AUTH_TOKEN,
      redis: redis.topology,
      kube: kubeConfigSourceOf({ KUBECONFIG: e.KUBECONFIG }),
      watchNamespaces: e.CAPTF_WATCH_NAMESPACES,
      keyPrefix: e.CAPTF_KEY_PREFIX,
      mode: e.CAPTF_RELAY_MODE,
      watch: e.CAPTF_RELAY_WATCH,
      leaseTtlMs: e.CAPTF_RELAY_LEASE_TTL_MS,
      tickIntervalMs: e.CAPTF_TICK_INTERVAL_MS,
      tickTimeoutMs: e.CAPTF_TICK_TIMEOUT_MS,
      holder: e.HOSTNAME,
      logLevel: e.LOG_LEVEL,
    },
  };
}
