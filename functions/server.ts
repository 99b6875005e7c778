import type { FastifyInstance } from 'fastify';
import type { Clock } from '../src/adapters/clock.ts';
import { systemClock } from '../src/adapters/clock.ts';
import type { KubeAdapter } from '../src/adapters/kube/adapter.ts';
import { createKubeAdapter } from '../src/adapters/kube/adapter.ts';
import type { KubeConfigSource } from '../src/adapters/kube/connection.ts';
import type { RedisAdapter } from '../src/adapters/redis/adapter.ts';
import { createRedisAdapter } from '../src/adapters/redis/adapter.ts';
import { readConfig } from '../src/config.ts';
import { buildApp } from '../src/http/app.ts';
import { createLogger } from '../src/http/logger.ts';
import { createRedisFleetStore } from '../src/metrics/redis-fleet-store.ts';
import { createMetrics } from '../src/metrics/registry.ts';
import type { ReconcileStep } from '../src/step/contract.ts';
import type { StepConfig } from '../src/step/deps.ts';
import { type StepMetrics, stepMetricsOf } from '../src/step/step-metrics.ts';
import { composeAppDeps } from './compose.ts';

/**
 * The Knative / container entry point (DESIGN.md section 15): reads the configuration once, builds the
 * adapters and the app, listens on PORT, and on SIGTERM stops taking requests, finishes the steps in flight
 * and closes the clients. Knative sends SIGTERM and waits `terminationGracePeriodSeconds`.
 */

/** What the server hands the step factory: the adapters, the clock and the step's configuration. */
export interface StepInputs {
  kube: KubeAdapter;
  redis: RedisAdapter;
  clock: Clock;
  config: StepConfig;
  /** The step's metrics, on the app's registry and the fleet store `/metrics` reads. */
  metrics: StepMetrics;
}

/** Builds the reconcile step (src/step) from the server's adapters. */
export type StepFactory = (inputs: StepInputs) => ReconcileStep;

/** A running server. */
export interface RunningServer {
  app: FastifyInstance;
  /** `http://host:port` actually bound (PORT=0 picks a free port). */
  url: string;
  /** Graceful stop: in-flight steps finish, then the clients close. */
  stop(): Promise<void>;
}

/**
 * Starts the handlers. Throws (with every problem listed) when the configuration is invalid. Signals are
 * handled only when `handleSignals` is set (the process entry point), so tests can run several servers.
 */
export async function runServer(
  env: Record<string, string | undefined>,
  createStep: StepFactory,
  options: { handleSignals: boolean } = { handleSignals: true },
): Promise<RunningServer> {
  const read = readConfig(env);
  if (!read.ok) throw new Error(read.message);
  const { config } = read;
  const logger = createLogger(config.logLevel);
  const redis = createRedisAdapter({
    topology: config.redis,
    keyPrefix: config.keyPrefix,
    onError: (error) => logger.debug({ err: error }, 'redis: connection error'),
  });
  const kubeSource: KubeConfigSource =
    config.kube.mode === 'in-cluster' ? { kind: 'in-cluster' } : { kind: 'file', path: config.kube.path };
  const kube = createKubeAdapter({
    source: kubeSource,
    clock: systemClock,
    reporter: { controller: 'captf.io/controller', instance: (env.HOSTNAME ?? 'captf').slice(0, 128) },
  });
  const fleet = createRedisFleetStore(redis.client, config.keyPrefix);
  const fleetDown = (error: unknown) => logger.warn({ err: error }, 'metrics: fleet store unreachable');
  const metrics = createMetrics(fleet, fleetDown);
  const step = createStep({
    kube,
    redis,
    clock: systemClock,
    config: {
      runnerImage: config.runnerImage,
      maxActiveJobs: config.maxActiveJobs,
      clusterMaxActiveJobs: config.clusterMaxActiveJobs,
    },
    metrics: stepMetricsOf(metrics, fleet, fleetDown),
  });
  const app = buildApp(composeAppDeps({ config, logger, redis, kube, step, clock: systemClock, metrics }));
  const url = await app.listen({ port: config.port, host: config.host });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      logger.info('server: stopping; finishing steps in flight');
      await app.close();
      await redis.close();
    })();
    return stopping;
  };
  if (options.handleSignals) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        void stop().then(() => process.exit(0));
      });
    }
  }
  logger.info({ url, auth: config.auth.mode }, 'server: listening');
  return { app, url, stop };
}
