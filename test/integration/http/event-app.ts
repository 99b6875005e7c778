import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { composeAppDeps } from '../../../functions/compose.ts';
import type { RequestCounts } from '../../../src/adapters/kube/request-count.ts';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { readConfig } from '../../../src/config.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { buildApp } from '../../../src/http/app.ts';
import { createLogger } from '../../../src/http/logger.ts';
import { buildEventMessage, type KubeObject } from '../../../src/relay/event.ts';
import { RELAY_RESOURCES } from '../../../src/relay/resources.ts';
import type { ApiServerMode, ApiServerVerb } from '../../../src/schemas/cloudevents.ts';
import { testStack } from '../../env/index.ts';
import type { StepEnv } from '../step/harness.ts';

/**
 * The handlers over a step environment (test/integration/step/harness.ts): the real composition root, the
 * real step (unshadowed: a dry run's reads would be counted as the event's), Redis and API server, driven
 * one CloudEvent at a time as the relay builds them (src/relay/event.ts), so the Kubernetes adapter's
 * request counter sees exactly what one event costs.
 */

/** One delivered event: the answer and the API requests it cost. */
export interface Delivered {
  status: number;
  body: { handled: boolean; reason?: string; outcome?: { action?: string; reason?: string; job?: string } };
  counts: RequestCounts;
}

export interface EventApp {
  app: FastifyInstance;
  /** Delivers one event about `object` (the copy as given, as its JSON) in `mode`. */
  deliver(mode: ApiServerMode, verb: ApiServerVerb, object: object): Promise<Delivered>;
  /** One of our objects as the API server has it now, plain JSON (an event's copy). */
  copyOf(ref: ObjectRef): Promise<KubeObject>;
  close(): Promise<void>;
}

/**
 * The handlers over `env`, not yet ready: the real composition root with the env's Redis, Kubernetes
 * adapter, clock and key prefix, authentication off, silent logs. `configEnv` adds configuration variables
 * (e.g. `CAPTF_WATCH_NAMESPACES`); `step` is the step's options (shadow on unless it says otherwise).
 */
export function handlersOver(
  env: StepEnv,
  options: { configEnv?: Record<string, string>; step?: Parameters<StepEnv['step']>[0] } = {},
): FastifyInstance {
  const stack = testStack();
  const read = readConfig({
    REDIS_URL: stack.redisUrl,
    KUBECONFIG: stack.kubeconfigPath,
    CAPTF_AUTH_DISABLED: 'true',
    CAPTF_RUNNER_IMAGE: env.config.runnerImage,
    CAPTF_KEY_PREFIX: env.keyPrefix,
    LOG_LEVEL: 'silent',
    ...options.configEnv,
  });
  if (!read.ok) throw new Error(read.message);
  return buildApp(
    composeAppDeps({
      config: read.config,
      logger: createLogger('silent'),
      redis: env.redis,
      kube: env.kube,
      step: env.step(options.step),
      clock: env.clock,
    }),
  );
}

/** Builds the app over `env`, unshadowed: a dry run's reads would be counted as the event's. */
export async function eventApp(env: StepEnv): Promise<EventApp> {
  const app = handlersOver(env, { step: { shadow: false } });
  await app.ready();
  return {
    app,
    async deliver(mode, verb, given) {
      const object = JSON.parse(JSON.stringify(given)) as KubeObject;
      const resource = RELAY_RESOURCES.find((r) => r.kind === object.kind);
      if (resource === undefined) throw new Error(`deliver: no relay resource for ${object.kind}`);
      const message = buildEventMessage({
        mode,
        verb,
        resource,
        object,
        source: 'https://kube.test',
        id: randomUUID(),
        time: new Date(),
      });
      env.kube.takeRequestCounts();
      const response = await app.inject({
        method: 'POST',
        url: '/events',
        headers: message.headers,
        payload: message.body,
      });
      return {
        status: response.statusCode,
        body: response.json() as Delivered['body'],
        counts: env.kube.takeRequestCounts(),
      };
    },
    async copyOf(ref) {
      return (await env.custom.getNamespacedCustomObject({
        ...CUSTOM_RESOURCES[ref.kind],
        namespace: ref.namespace,
        name: ref.name,
      })) as KubeObject;
    },
    close: () => app.close(),
  };
}
