import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { ReconcileStep } from '../step/contract.ts';
import type { Metrics } from './registry.ts';

/**
 * Wait reasons that mean "a lease or a Job slot is taken" (DESIGN.md section 6): they count toward
 * `captf_lease_waits_total{reason}`. Other waits (backoff, approval, pause) are not lease waits.
 */
export const LEASE_WAIT_REASONS: ReadonlySet<string> = new Set<WaitReason>([
  'WaitingForJobSlot',
  'WaitingForClusterOperation',
  'WaitingForMachineOperations',
  'WaitingForRunLease',
  'LockContended',
]);

/**
 * Wraps a step so every call, from any route, counts toward `captf_reconcile_steps_total{action}`,
 * `captf_reconcile_step_duration_seconds` and, for lease and slot waits, `captf_lease_waits_total{reason}`.
 * A step that throws (a bug) counts as action `error`.
 */
export function instrumentStep(step: ReconcileStep, metrics: Metrics, clockMs: () => number): ReconcileStep {
  return async (ref, options) => {
    const startMs = clockMs();
    try {
      const outcome = await step(ref, options);
      metrics.stepsTotal.inc({ action: outcome.action });
      if (outcome.action === 'waiting' && LEASE_WAIT_REASONS.has(outcome.reason)) {
        metrics.leaseWaits.inc({ reason: outcome.reason });
      }
      return outcome;
    } catch (error) {
      metrics.stepsTotal.inc({ action: 'error' });
      throw error;
    } finally {
      metrics.stepDuration.observe((clockMs() - startMs) / 1000);
    }
  };
}
