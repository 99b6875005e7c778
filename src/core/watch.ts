import { TERMINATION_GRACE_SECONDS } from '../schemas/job-contract.ts';
import { PULL_FAILURE_REASONS, SOURCE_CONTAINER } from './classify.ts';
import { WAIT_TABLE } from './gates.ts';
import { type JobView, type PodView, timestampMs } from './views.ts';

/**
 * Watching an active Job (DESIGN.md section 5, step 4): surface pull trouble at once, enforce the deadline
 * when the Job controller is late, and delete a Job that can never start. Requeue at most 60 s later.
 */

/** Slack after deadline + grace before the controller enforces the deadline itself. */
export const DEADLINE_SLACK_SECONDS = 60;
/** A Job whose per-run Secret is missing and whose pods are all Pending for this long is stuck. */
export const STUCK_AFTER_SECONDS = 60;

export interface WatchInput {
  now: Date;
  job: JobView;
  pods: readonly PodView[];
  /** The Job's per-run Secret exists (read live). */
  runSecretExists: boolean;
}

export type WatchDecision =
  | { kind: 'watch'; reason: 'JobActive'; requeueAfterSeconds: number }
  | { kind: 'watch'; reason: 'ImagePullBackOff'; requeueAfterSeconds: number; message: string }
  | { kind: 'delete'; reason: 'JobDeadlineExceeded'; message: string }
  | { kind: 'delete'; reason: 'StuckJobDeleted'; message: string };

function pullTrouble(pods: readonly PodView[]): string | undefined {
  for (const pod of pods) {
    const source = pod.status?.containerStatuses?.find((c) => c.name === SOURCE_CONTAINER);
    const reason = source?.state?.waiting?.reason;
    if (reason && PULL_FAILURE_REASONS.includes(reason)) return reason;
  }
  return undefined;
}

/** What to do about an active Job now. Pure: the shell deletes (Background propagation) and records. */
export function watchActiveJob(input: WatchInput): WatchDecision {
  const now = input.now.getTime();
  const startedMs =
    timestampMs(input.job.status?.startTime) ?? timestampMs(input.job.metadata.creationTimestamp) ?? now;
  const deadlineSeconds = input.job.spec?.activeDeadlineSeconds;
  const overdueMs =
    deadlineSeconds === undefined
      ? undefined
      : startedMs + (deadlineSeconds + TERMINATION_GRACE_SECONDS + DEADLINE_SLACK_SECONDS) * 1000;
  if (overdueMs !== undefined && now >= overdueMs) {
    return {
      kind: 'delete',
      reason: 'JobDeadlineExceeded',
      message: `the Job ran past activeDeadlineSeconds (${deadlineSeconds}s) plus grace and slack; deleting it`,
    };
  }
  const createdMs = timestampMs(input.job.metadata.creationTimestamp) ?? now;
  const stuckMs = createdMs + STUCK_AFTER_SECONDS * 1000;
  const allPending = input.pods.every((p) => p.status?.phase === 'Pending');
  if (!input.runSecretExists && allPending && now >= stuckMs) {
    return {
      kind: 'delete',
      reason: 'StuckJobDeleted',
      message: `the per-run Secret is missing and no pod started within ${STUCK_AFTER_SECONDS}s`,
    };
  }
  const untilNext = [overdueMs, input.runSecretExists ? undefined : stuckMs]
    .filter((ms): ms is number => ms !== undefined)
    .map((ms) => Math.ceil((ms - now) / 1000));
  const pull = pullTrouble(input.pods);
  if (pull) {
    return {
      kind: 'watch',
      reason: 'ImagePullBackOff',
      requeueAfterSeconds: Math.min(WAIT_TABLE.ImagePullBackOff.requeueSeconds, ...untilNext),
      message: `the module image cannot be pulled (${pull})`,
    };
  }
  return {
    kind: 'watch',
    reason: 'JobActive',
    requeueAfterSeconds: Math.min(WAIT_TABLE.JobActive.requeueSeconds, ...untilNext),
  };
}
