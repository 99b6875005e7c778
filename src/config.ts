import { z } from 'zod';
import { type KubeConfigSource, kubeConfigSourceOf } from './adapters/kube/config-source.ts';
import { REDIS_ENV_SHAPE, type RedisTopology, redisTopologyOf } from './adapters/redis/topology.ts';
import { DEFAULT_CLUSTER_MAX_ACTIVE_JOBS, DEFAULT_MAX_ACTIVE_JOBS } from './core/slot-shares.ts';
import { installationStateEncryption } from './core/state-encryption.ts';
import type { WatchNamespaces } from './core/watch-scope.ts';
import { commaList } from './schemas/comma-list.ts';
import type { StateEncryption } from './schemas/kinds/state-encryption.ts';
import { unsetWhenEmpty } from './schemas/unset-when-empty.ts';
import { WatchNamespacesEnv } from './schemas/watch-namespaces.ts';

/**
 * The controller's configuration, read once from the environment at start, validated by zod and passed in
 * (STYLE.md habit 7). Nothing else reads `process.env`.
 */

/** A positive integer parsed from an environment string. */
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** `true`/`false` (also `1`/`0`, `yes`/`no`) from an environment string; anything else is rejected. */
const envFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .default('false')
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const EnvSchema = z
  .object({
    /** 0 picks a free port (tests). */
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().min(1).default('0.0.0.0'),
    /** Bearer token guarding the mutating routes (DESIGN.md section 13); at least 32 characters. */
    CAPTF_AUTH_TOKEN: z.string().min(32, 'CAPTF_AUTH_TOKEN: at least 32 characters').optional(),
    /**
     * The handlers' OIDC audience (issue 16): a bearer token that is not CAPTF_AUTH_TOKEN is accepted when a
     * TokenReview finds it valid for this audience (the tokens Knative sources send, `sink.audience`).
     */
    CAPTF_AUTH_AUDIENCE: z.string().min(1, 'CAPTF_AUTH_AUDIENCE: empty').optional(),
    /**
     * Comma-separated user names a reviewed token must belong to (the sources' OIDC ServiceAccounts,
     * `system:serviceaccount:<namespace>:<name>`); absent: any user the API server authenticates for the
     * audience. Only with CAPTF_AUTH_AUDIENCE.
     */
    CAPTF_AUTH_ALLOWED_USERS: commaList()
      .pipe(z.array(z.string()).min(1, 'CAPTF_AUTH_ALLOWED_USERS: at least one user name'))
      .optional(),
    /** Explicit opt-out of bearer auth for cluster-local use only (DESIGN.md section 13). */
    CAPTF_AUTH_DISABLED: envFlag,
    /** One node, a Redis Cluster or Sentinel (src/adapters/redis/topology.ts): exactly one of them. */
    ...REDIS_ENV_SHAPE,
    /** Path of a kubeconfig; absent (and no CAPTF_KUBECONFIG_CONTENT) means in-cluster configuration. */
    KUBECONFIG: z.string().min(1).optional(),
    /**
     * A kubeconfig's content, loaded from memory and never written to disk (AWS Lambda, which has no service
     * account: serverless.yml); wins over KUBECONFIG. Empty reads as unset (kubeConfigSourceOf).
     */
    CAPTF_KUBECONFIG_CONTENT: z.string().optional(),
    /** DESIGN.md section 5: `--max-active-jobs` per installation. */
    CAPTF_MAX_ACTIVE_JOBS: positiveInt(DEFAULT_MAX_ACTIVE_JOBS),
    /** DESIGN.md section 5: `--cluster-max-active-jobs` per Cluster API cluster. */
    CAPTF_CLUSTER_MAX_ACTIVE_JOBS: positiveInt(DEFAULT_CLUSTER_MAX_ACTIVE_JOBS),
    /** DESIGN.md section 8: `--sync-period` of the sweep, seconds (default 10 min). */
    CAPTF_SYNC_PERIOD_SECONDS: positiveInt(600),
    /** Wall-clock budget of one `/tick` call, milliseconds; below Knative's 300 s request timeout. */
    CAPTF_TICK_BUDGET_MS: positiveInt(45_000),
    /** Steps run at once by one `/tick` call. */
    CAPTF_TICK_CONCURRENCY: positiveInt(8),
    /** Due requeues claimed by one `/tick` call. */
    CAPTF_TICK_BATCH: positiveInt(100),
    /**
     * Seconds a fleet snapshot answers `/metrics` before the store is read again (src/metrics/fleet-snapshot.ts):
     * twice the shipped PodMonitor's 30 s interval, so a scrape reads Redis at most every other time, and
     * never more often however many Prometheus servers scrape; 0 reads at every scrape.
     */
    CAPTF_METRICS_FLEET_MAX_AGE_SECONDS: z.coerce.number().int().min(0).default(60),
    /**
     * `/metrics` behind the same bearer auth as the other routes: where the function URL is public (AWS
     * Lambda's HTTP API, serverless.yml), not where a PodMonitor scrapes the pod inside the cluster.
     */
    CAPTF_METRICS_AUTH: envFlag,
    /** DESIGN.md section 9: `--runner-image`, copied into every Job by its init container. */
    CAPTF_RUNNER_IMAGE: z.string().min(1),
    /** Namespaces this installation reconciles, comma-separated; absent: all (src/core/watch-scope.ts). */
    CAPTF_WATCH_NAMESPACES: WatchNamespacesEnv,
    /** Prefix of every Redis key; keys are hash-tagged after it (DESIGN.md section 8). */
    CAPTF_KEY_PREFIX: z
      .string()
      .regex(/^[a-z0-9-]{1,32}$/, 'CAPTF_KEY_PREFIX: 1-32 of a-z, 0-9, -')
      .default('captf'),
    /** Largest request body in bytes (DESIGN.md section 13); a resource-mode event carries one object. */
    CAPTF_BODY_LIMIT_BYTES: positiveInt(1_048_576),
    /**
     * The installation's default state encryption (issue 25 item 3): `<secret>/<key>`, the passphrase Secret
     * in each object's namespace, for every object whose spec names no `stateEncryption`. Empty: unset
     * (serverless.yml passes its parameter's empty default).
     */
    CAPTF_STATE_ENCRYPTION_SECRET: unsetWhenEmpty(z.string()),
    /** Its fallback: the previous `<secret>/<key>` (a rotation), or `unencrypted` (encrypting plain states). */
    CAPTF_STATE_ENCRYPTION_FALLBACK: unsetWhenEmpty(z.string()),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .refine(
    (env) =>
      env.CAPTF_AUTH_DISABLED || env.CAPTF_AUTH_TOKEN !== undefined || env.CAPTF_AUTH_AUDIENCE !== undefined,
    {
      message: 'CAPTF_AUTH_TOKEN: required (or CAPTF_AUTH_AUDIENCE) unless CAPTF_AUTH_DISABLED=true',
      path: ['CAPTF_AUTH_TOKEN'],
    },
  )
  .refine((env) => env.CAPTF_AUTH_ALLOWED_USERS === undefined || env.CAPTF_AUTH_AUDIENCE !== undefined, {
    message: 'CAPTF_AUTH_ALLOWED_USERS: only with CAPTF_AUTH_AUDIENCE',
    path: ['CAPTF_AUTH_ALLOWED_USERS'],
  });

/** TokenReview of the bearer tokens that are not the static one (issue 16): the sources' OIDC tokens. */
export interface OidcAuthConfig {
  audience: string;
  /** The user names a token must belong to; undefined: any user authenticated for the audience. */
  allowedUsers?: readonly string[];
}

/**
 * Bearer auth: a static token, audience-bound tokens checked by TokenReview, or both; or disabled by an
 * explicit flag (never by a missing token). At least one of `token` and `oidc` is set.
 */
export type AuthConfig = { mode: 'bearer'; token?: string; oidc?: OidcAuthConfig } | { mode: 'disabled' };

/** The validated configuration; units in names. */
export interface Config {
  port: number;
  host: string;
  auth: AuthConfig;
  /** Where Redis is: one node, a Redis Cluster or Sentinel. */
  redis: RedisTopology;
  /** A kubeconfig file, a kubeconfig's content, or the pod's service account. */
  kube: KubeConfigSource;
  maxActiveJobs: number;
  clusterMaxActiveJobs: number;
  syncPeriodSeconds: number;
  tickBudgetMs: number;
  tickConcurrency: number;
  tickBatch: number;
  /** Seconds a fleet snapshot answers `/metrics` (DESIGN.md section 14). */
  metricsFleetMaxAgeSeconds: number;
  /** `/metrics` asks for the bearer auth of the other routes. */
  metricsAuth: boolean;
  runnerImage: string;
  /** Namespaces reconciled; empty: all (src/core/watch-scope.ts). */
  watchNamespaces: WatchNamespaces;
  keyPrefix: string;
  bodyLimitBytes: number;
  /** The default state encryption of objects whose spec names none; undefined: none. */
  stateEncryption?: StateEncryption;
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
}

function authOf(e: z.infer<typeof EnvSchema>): AuthConfig {
  if (e.CAPTF_AUTH_DISABLED) return { mode: 'disabled' };
  return {
    mode: 'bearer',
    ...(e.CAPTF_AUTH_TOKEN === undefined ? {} : { token: e.CAPTF_AUTH_TOKEN }),
    ...(e.CAPTF_AUTH_AUDIENCE === undefined
      ? {}
      : {
          oidc: {
            audience: e.CAPTF_AUTH_AUDIENCE,
            ...(e.CAPTF_AUTH_ALLOWED_USERS === undefined ? {} : { allowedUsers: e.CAPTF_AUTH_ALLOWED_USERS }),
          },
        }),
  };
}

/** The outcome of reading the configuration: a value, or every problem in one message. */
export type ConfigResult = { ok: true; config: Config } | { ok: false; message: string };

/**
 * Reads the configuration from an environment map (normally `process.env`, passed in by the entry point).
 * Returns every invalid variable at once, as `NAME: problem` lines.
 */
export function readConfig(env: Record<string, string | undefined>): ConfigResult {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const message = parsed.error.issues
      .map((issue) => {
        const name = issue.path.join('.');
        return issue.message.startsWith(`${name}:`) ? issue.message : `${name}: ${issue.message}`;
      })
      .join('\n');
    return { ok: false, message: `read config: ${message}` };
  }
  const e = parsed.data;
  const redis = redisTopologyOf(e);
  if (!redis.ok) return { ok: false, message: `read config: ${redis.problems.join('\n')}` };
  const encryption = installationStateEncryption(
    e.CAPTF_STATE_ENCRYPTION_SECRET,
    e.CAPTF_STATE_ENCRYPTION_FALLBACK,
  );
  if (!encryption.ok) return { ok: false, message: `read config: ${encryption.message}` };
  return {
    ok: true,
    config: {
      port: e.PORT,
      host: e.HOST,
      auth: authOf(e),
      redis: redis.topology,
      kube: kubeConfigSourceOf(e),
      maxActiveJobs: e.CAPTF_MAX_ACTIVE_JOBS,
      clusterMaxActiveJobs: e.CAPTF_CLUSTER_MAX_ACTIVE_JOBS,
      syncPeriodSeconds: e.CAPTF_SYNC_PERIOD_SECONDS,
      tickBudgetMs: e.CAPTF_TICK_BUDGET_MS,
      tickConcurrency: e.CAPTF_TICK_CONCURRENCY,
      tickBatch: e.CAPTF_TICK_BATCH,
      metricsFleetMaxAgeSeconds: e.CAPTF_METRICS_FLEET_MAX_AGE_SECONDS,
      metricsAuth: e.CAPTF_METRICS_AUTH,
      runnerImage: e.CAPTF_RUNNER_IMAGE,
      watchNamespaces: e.CAPTF_WATCH_NAMESPACES,
      keyPrefix: e.CAPTF_KEY_PREFIX,
      bodyLimitBytes: e.CAPTF_BODY_LIMIT_BYTES,
      ...(encryption.encryption ? { stateEncryption: encryption.encryption } : {}),
      logLevel: e.LOG_LEVEL,
    },
  };
}
