import { z } from 'zod';

/**
 * Why nothing is happening (DESIGN.md section 6): the closed set of `status.waitReason` values. The requeue
 * interval of each lives in src/core/wait-table.ts, typed by this set.
 */
export const WAIT_REASONS = [
  /** A Job of the object runs; the Job's own events wake the object, 60 s is the fallback. */
  'JobActive',
  /** An image of the running Job (the module image or the runner's init image) cannot be pulled (yet). */
  'ImagePullBackOff',
  /** A container of the running Job cannot be created from its configuration (a missing Secret or ConfigMap). */
  'CreateContainerConfigError',
  /** Cluster API pause: bookkeeping continues, nothing starts. */
  'Paused',
  /** Counted failures earned a delay (DESIGN.md section 4); see `nextAttemptAt`. */
  'Backoff',
  /** A plan waits for a person to approve its TerraformPlan (DESIGN.md section 11). */
  'AwaitingApproval',
  /** Something this object builds on is not ready (a machine's cluster infrastructure, a cluster's machines). */
  'WaitingForDependencies',
  /** A Secret that `variablesFrom` or `env[].valueFrom` reads lacks the label `captf.io/variables=true`. */
  'VariablesSecretNotOptedIn',
  /** The installation or the Cluster API cluster runs as many Jobs as allowed. */
  'WaitingForJobSlot',
  /** The merged Job policy breaks a rule (lock timeout not below the deadline). */
  'JobPolicyInvalid',
  /** The spec fails validation the API server could not do (a cron schedule that does not parse). */
  'SpecInvalid',
  /** A TerraformCluster apply or destroy holds the cluster lease; machines and pools wait. */
  'WaitingForClusterOperation',
  /** Machine or pool applies or destroys hold leases; the cluster's apply or destroy waits. */
  'WaitingForMachineOperations',
  /** Another step holds this object's run lease. */
  'WaitingForRunLease',
  /** The state lock is held by a live holder (DESIGN.md section 4: not counted, 30 s). */
  'LockContended',
  /** A pod of an earlier attempt is not terminal yet (DESIGN.md section 5, API guard). */
  'WaitingForPreviousAttempt',
  /** A Job with our deterministic name exists but belongs to something else. */
  'WaitingForForeignJob',
  /** A write of ours is not visible in the reads yet. */
  'WaitingForCache',
] as const;
export const WaitReasonSchema = z.enum(WAIT_REASONS);
export type WaitReason = z.infer<typeof WaitReasonSchema>;
