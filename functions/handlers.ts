import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Clock } from '../src/adapters/clock.ts';
import { systemClock } from '../src/adapters/clock.ts';
import type { KubeAdapter } from '../src/adapters/kube/adapter.ts';
import { createKubeAdapter } from '../src/adapters/kube/adapter.ts';
import type { RedisAdapter } from '../src/adapters/redis/adapter.ts';
import { createRedisAdapter } from '../src/adapters/redis/adapter.ts';
import { type Config, readConfig } from '../src/config.ts';
import { buildApp } from '../src/http/app.ts';
import { createLogger } from '../src/http/logger.ts';
import { createRedisFleetStore } from '../src/metrics/redis-fleet-store.ts';
import { createMetrics } from '../src/metrics/registry.ts';
import type { ReconcileStep } from '../src/step/contract.ts';
import type { StepConfig } from '../src/step/deps.ts';
import { type StepMetrics, stepMetricsOf } from '../src/step/step-metrics.ts';
import { composeAppDeps } from './compose.ts';

/**
 * The handlers of every platform (DESIGN.md section 15), built once per instance from the environment: the
 * configuration, the Redis and Kubernetes adapters, the metrics, the step and the fastify app. The
 * container server (functions/server.ts) listens on it; the Lambda entry (functions/lambda.ts) hands it
 * one request at a time.
 */

/** What the step factory gets: the adapters, the clock and the step's configuration. */
export interface StepInputs {
  kube: KubeAdapter;
  redis: RedisAdapter;
  clock: Clock;
  config: StepConfig;
  /** The step's metrics, on the app's registry and the fleet store `/metrics` reads. */
  metrics: StepMetrics;
}

/** Builds the reconcile step (src/step) from the handlers' adapters. */
export type StepFactory = (inputs: StepInputs) => ReconcileStep;

/** The handlers of one instance. */
export interface Handlers {
  app: FastifyInstance;
  config: Config;
  logger: Logger;
  /**
   * Readies the app and waits for the first Redis connection (at most REDIS_READY_TIMEOUT_MS), so the first
   * request of a new instance is not answered 503 only because the connection was still being opened. An
   * unreachable Redis is logged, not thrown: the instance comes up, and its requests answer 503 until Redis
   * is back.
   */
  ready(): Promise<void>;
  /** Stops taking requests, waits for the steps in flight, then closes the Redis client. Idempotent. */
  close(): Promise<void>;
}

/** How long a new instance waits for Redis before it serves anyway, ms. */
const REDIS_READY_TIMEOUT_MS = 5000;

/** Builds the handlers. Throws (with every problem listed) when the configuration is invalid. */
export function createHandlers(env: Record<string, string | undefined>, createStep: StepFactory): Handlers {
  const read = readConfig(env);
  if (!read.ok) throw new Error(read.message);
  const { config } = read;
  const logger = createLogger(config.logLevel);
  const redis = createRedisAdapter({
    topology: config.redis,
    keyPrefix: config.keyPrefix,
    onError: (error) => logger.debug({ err: error }, 'redis: connection error'),
  });
  const kube = createKubeAdapter({
    source: config.kube,
    clock: systemClock,
    reporter: { controller: 'captf.io/controller', instance: (env.HOSTNAME ?? 'captf').slice(0, 128) },
  });
  const fleet = createRedisFleetStore(redis.client, config.keyPrefix);
  const fleetDown = (error: unknown) => logger.warn({ err: error }, 'metrics: fleet store unreachable');
  const metrics = createMetrics(fleet, fleetDown, () => kube.requestCounts(), {
    fleetMaxAgeMs: config.metricsFleetMaxAgeSeconds * 1000,
    processMetrics: true,
  });
  const step = createStep({
    kube,
    redis,
    clock: systemClock,
    config: {
      runnerImage: config.runnerImage,
      maxActiveJobs: config.maxActiveJobs,
      clusterMaxActiveJobs: config.clusterMaxActiveJobs,
      ...(config.stateEncryption ? { stateEncryption: config.stateEncryption } : {}),
    },
    metrics: stepMetricsOf(metrics, fleet, fleetDown),
  });
  const app = buildApp(composeAppDeps({ config, logger, redis, kube, step, clock: systemClock, metrics }));
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await app.close();
      await redis.close();
    })();
    return closing;
  };
  const ready = async () => {
    await app.ready();
    await redis.waitUntilReady(REDIS_READY_TIMEOUT_MS).catch((error: unknown) => {
      logger.warn({ err: error }, 'redis: not connected yet; answering 503 until it is');
    });
  };
  return { app, config, logger, ready, close };
}
