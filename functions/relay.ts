import { loadKubeConfig } from '../src/adapters/kube/connection.ts';
import { createRedisAdapter } from '../src/adapters/redis/adapter.ts';
import { createLogger } from '../src/http/logger.ts';
import { readRelayConfig } from '../src/relay/config.ts';
import { kubeWatchSource } from '../src/relay/kube-source.ts';
import { runRelay } from '../src/relay/relay.ts';
import { watchedResources } from '../src/relay/resources.ts';
import { DEFAULT_RETRY_POLICY } from '../src/relay/retry.ts';
import { createSender } from '../src/relay/sender.ts';
import { startTickTimer } from '../src/relay/timer.ts';
import { namedLease } from '../src/schedule/single-holder-lease.ts';

/**
 * The bundled relay process (DESIGN.md section 15) for installs without Knative and for the local run:
 * watch → CloudEvents → `/events`, plus the local timer → `/tick`. Run several replicas: one holds the relay
 * lease and sends. `node functions/relay.ts`; stops cleanly on SIGTERM/SIGINT.
 */

/** Runs until `signal` aborts. Throws when the configuration is invalid. */
export async function runRelayProcess(
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<void> {
  const read = readRelayConfig(env);
  if (!read.ok) throw new Error(read.message);
  const { config } = read;
  const logger = createLogger(config.logLevel);
  const kc = loadKubeConfig(config.kube);
  const apiServerUrl = kc.getCurrentCluster()?.server ?? '';
  const redis = createRedisAdapter({
    topology: config.redis,
    keyPrefix: config.keyPrefix,
    onError: (error) => logger.debug({ err: error }, 'relay redis: connection error'),
  });
  const stopTimer =
    config.tickIntervalMs > 0
      ? startTickTimer({
          url: config.tickUrl,
          token: config.token,
          intervalMs: config.tickIntervalMs,
          timeoutMs: config.tickTimeoutMs,
          logger,
        })
      : async () => undefined;
  try {
    await runRelay({
      resources: watchedResources(config.watchNamespaces, config.watch),
      source: kubeWatchSource(kc),
      send: createSender({
        url: config.eventsUrl,
        token: config.token,
        policy: DEFAULT_RETRY_POLICY,
        timeoutMs: 30_000,
        logger,
      }),
      mode: config.mode,
      apiServerUrl,
      // One relay of each kind watches at a time: the Secrets' relay runs beside the objects' one.
      lease: namedLease(redis, config.watch === 'secrets' ? 'relay-secrets' : 'relay'),
      holder: config.holder,
      leaseTtlMs: config.leaseTtlMs,
      logger,
      backoff: { initialMs: 1000, maxMs: 30_000 },
      signal,
      clock: Date.now,
    });
  } finally {
    await stopTimer();
    await redis.close();
  }
}

if (import.meta.main) {
  const controller = new AbortController();
  for (const name of ['SIGTERM', 'SIGINT'] as const) process.once(name, () => controller.abort());
  await runRelayProcess(process.env, controller.signal);
}
