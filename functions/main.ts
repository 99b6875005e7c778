import { DEFAULT_REQUEST_TIMEOUT_MS } from '../src/adapters/kube/adapter.ts';
import { RequestCounter } from '../src/adapters/kube/request-count.ts';
import { NO_FAILPOINTS } from '../src/step/failpoints.ts';
import { createSpecWriter } from '../src/step/spec-patch.ts';
import { createReconcileStep } from '../src/step/step.ts';
import { runServer, type StepInputs } from './server.ts';

/**
 * The process entry point of the handlers (functions/captf.dockerfile, serverless.yml): the real reconcile
 * step wired into the server. `node functions/main.ts`.
 */
export function productionStep(inputs: StepInputs) {
  return createReconcileStep({
    kube: inputs.kube,
    specWriter: createSpecWriter(inputs.kubeSource, {
      requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
      counter: new RequestCounter(),
    }),
    redis: inputs.redis,
    clock: inputs.clock,
    config: inputs.config,
    failpoints: NO_FAILPOINTS,
    metrics: inputs.metrics,
  });
}

if (import.meta.main) {
  await runServer(process.env, productionStep);
}
