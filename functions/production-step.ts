import { NO_FAILPOINTS } from '../src/step/failpoints.ts';
import { createReconcileStep } from '../src/step/step.ts';
import type { StepInputs } from './handlers.ts';

/** The real reconcile step with no failpoints, as every shipped entry point runs it. */
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
