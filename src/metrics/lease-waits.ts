import type { StepReason } from '../core/step-outcome.ts';

/**
 * Wait reasons that mean "a lease or a Job slot is taken" (DESIGN.md section 6): they count toward
 * `captf_lease_waits_total{reason}`. Other waits (backoff, approval, pause) are not lease waits.
 */
export const LEASE_WAIT_REASONS: ReadonlySet<StepReason> = new Set<StepReason>([
  'WaitingForJobSlot',
  'WaitingForClusterOperation',
  'WaitingForMachineOperations',
  'WaitingForRunLease',
  'LockContended',
]);
