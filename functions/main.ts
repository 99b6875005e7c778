import { NO_FAILPOINTS } from '../src/step/failpoints.ts';
import { createReconcileStep } from '../src/step/step.ts';
import { runServer, type StepInputs } from './server.ts';

/**
 * The process entry point of the handlers (functions/captf.dockerfile, serverless.yml): the real reconcile
 * step wired into the server. `node functions/main.ts`.
 */
export function productionStep(inputs: StepInputs) {
  return createReconcileStep({
    kube: inputs.kube,
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
