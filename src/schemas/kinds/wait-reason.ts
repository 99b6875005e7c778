import { z } from 'zod';

/**
 * Why nothing is happening (DESIGN.md section 6): the closed set of `status.waitReason` values. The requeue
 * interval and the meaning of each live in src/core/wait-table.ts, typed by this set, and
 * docs/reference/conditions.md is generated from there.
 */
export const WAIT_REASONS = [
  'JobActive',
  'ImagePullBackOff',
  'CreateContainerConfigError',
  'Paused',
  'Backoff',
  'AwaitingApproval',
  'WaitingForDependencies',
  'WaitingForOwner',
  'WaitingForClusterInfrastructure',
  'WaitingForBootstrapData',
  'VariablesSecretNotOptedIn',
  'WaitingForJobSlot',
  'JobPolicyInvalid',
  'SpecInvalid',
  'StatusUnreadable',
  'StateMissing',
  'WaitingForClusterOperation',
  'WaitingForMachineOperations',
  'WaitingForRunLease',
  'LockContended',
  'WaitingForPreviousAttempt',
  'WaitingForForeignJob',
  'WaitingForCache',
  'WriteRefused',
  'NamespaceTerminating',
] as const;
export const WaitReasonSchema = z.enum(WAIT_REASONS);
export type WaitReason = z.infer<typeof WaitReasonSchema>;
