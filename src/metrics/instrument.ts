import type { ReconcileStep } from '../step/contract.ts';
import type { Metrics } from './registry.ts';

/**
 * Wraps a step so every call, from any route, counts toward `captf_reconcile_steps_total{action}` and
 * `captf_reconcile_step_duration_seconds`. A step that throws (a bug) counts as action `error`.
 */
export function instrumentStep(step: ReconcileStep, metrics: Metrics, clockMs: () => number): ReconcileStep {
  return async (ref, options) => {
    const startMs = clockMs();
    try {
      const outcome = await step(ref, options);
      metrics.stepsTotal.inc({ action: outcome.action });
      return outcome;
    } catch (error) {
      metrics.stepsTotal.inc({ action: 'error' });
      throw error;
    } finally {
      metrics.stepDuration.observe((clockMs() - startMs) / 1000);
    }
  };
}
