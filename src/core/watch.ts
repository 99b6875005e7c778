import { TERMINATION_GRACE_SECONDS } from '../schemas/job-contract.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { Op } from '../schemas/result.ts';
import { hasStartTime, podPullFailure, SOURCE_CONTAINER } from './classify.ts';
import { findCondition, OP_CONDITION } from './conditions.ts';
import { finishedCondition, jobDeadlineExceeded } from './job-conditions.ts';
import { type JobView, type PodView, timestampMs } from './views.ts';
import { WAIT_TABLE } from './wait-table.ts';

/**
 * Watching an active Job (DESIGN.md section 5, step 4): surface trouble starting any container at once (a
 * pull failure of the module image or of the runner's init image, a container that cannot be created from
 * its configuration), enforce the deadline when the Job controller is late, and delete a Job that can
 * never start. Requeue at most 300 s later, sooner when the deadline or the stuck check falls due first.
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
  /** The object carries a deletionTimestamp. */
  deleting: boolean;
  /** The Job's op (its label). */
  op: Op;
  /**
   * The message of the pull trouble the status already shows for this Job (`waitReason: ImagePullBackOff`
   * with this Job active); absent when it shows none.
   */
  pullTroubleShown?: string;
}

export type WatchDecision =
  | { kind: 'watch'; reason: 'JobActive'; requeueAfterSeconds: number }
  | {
      kind: 'watch';
      reason: 'ImagePullBackOff' | 'CreateContainerConfigError';
      requeueAfterSeconds: number;
      message: string;
    }
  | { kind: 'delete'; reason: 'JobDeadlineExceeded'; message: string }
  | { kind: 'delete'; reason: 'StuckJobDeleted' | 'UnstartedJobDeleted'; message: string };

/** The kubelet's waiting reason for a container it cannot create from the pod's configuration. */
const CONFIG_ERROR = 'CreateContainerConfigError';

/**
 * The kubelet alternates `ErrImagePull` (a pull attempt failed) and `ImagePullBackOff` (waiting for the next
 * one) on every back-off cycle: naming the phase would rewrite the status twice per cycle for one unchanged
 * fact. Both read as `ImagePullBackOff`; `InvalidImageName` never turns and stays itself.
 */
function stablePullReason(reason: string): string {
  return reason === 'ErrImagePull' ? 'ImagePullBackOff' : reason;
}

/** Trouble starting a container of any pod of the Job: which container, and the kubelet's reason. */
function startTrouble(
  pods: readonly PodView[],
): { reason: 'ImagePullBackOff' | 'CreateContainerConfigError'; message: string } | undefined {
  for (const pod of pods) {
    const pull = podPullFailure(pod);
    if (pull !== undefined) {
      return {
        reason: 'ImagePullBackOff',
        message: `the image ${pull.image ? `${pull.image} ` : ''}of container ${pull.container} cannot be pulled (${stablePullReason(pull.reason)})`,
      };
    }
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    const config = statuses.find((c) => c.state?.waiting?.reason === CONFIG_ERROR);
    if (config !== undefined) {
      return {
        reason: CONFIG_ERROR,
        message: `container ${config.name} cannot be created from its configuration (${CONFIG_ERROR})`,
      };
    }
  }
  return undefined;
}

/**
 * Whether no pod of the Job ever started its `source` container, the only one that runs OpenTofu (the init
 * container `runner` only copies the runner, DESIGN.md section 9). A pod proves it never started one while
 * it is Pending and no container status shows a running or terminated state, a last state, `started` or a
 * restart. A Job reporting active pods the read did not list proves nothing. Pods the kubelet is about to
 * start are covered too: a deleted pod's containers get SIGTERM, the runner's interrupt path (section 10).
 */
export function jobNeverStarted(job: JobView, pods: readonly PodView[]): boolean {
  if (pods.length === 0) return (job.status?.active ?? 0) === 0;
  return pods.every(
    (pod) =>
      pod.status?.phase === 'Pending' &&
      (pod.status.containerStatuses ?? []).every(
        (c) =>
          c.state?.running === undefined &&
          c.state?.terminated === undefined &&
          c.lastState?.running === undefined &&
          c.lastState?.terminated === undefined &&
          c.started !== true &&
          (c.restartCount ?? 0) === 0,
      ),
  );
}

/**
 * The pull trouble the status shows for Job `job` of `op` (`waitReason: ImagePullBackOff` while it is the
 * active Job): its op condition's message, which names the container. Undefined when it shows none.
 */
export function shownPullTrouble(status: TargetStatus, job: string, op: Op): string | undefined {
  if (status.waitReason !== 'ImagePullBackOff' || status.activeJob?.name !== job) return undefined;
  return (
    findCondition(status.conditions, OP_CONDITION[op])?.message ?? 'an image of the Job cannot be pulled'
  );
}

/**
 * Whether the pull trouble the status shows outlives what the pods show now: the Job is ending (its
 * deadline or a finish condition, or every pod deleted, terminal or gone) and no pod ever started its
 * `source` container. At the deadline the Job controller deletes the pod; a real kubelet (v1.36) then
 * reports the container that was still waiting on its image `terminated` (exit 137, reason
 * `ContainerStatusUnknown`, `startedAt: null`) in a `Failed` pod, which may go before bookkeeping reads
 * it. The waiting reason is gone, the trouble is not: bookkeeping reads it from the status (DESIGN.md
 * section 7, `ImagePullFailed`). A pull that recovered started the container.
 */
export function pullTroubleOutlived(job: JobView, pods: readonly PodView[]): boolean {
  const ending =
    jobDeadlineExceeded(job) ||
    finishedCondition(job) !== undefined ||
    pods.every(
      (pod) =>
        pod.metadata.deletionTimestamp !== undefined ||
        pod.status?.phase === 'Failed' ||
        pod.status?.phase === 'Succeeded',
    );
  const sourceStarted = pods.some((pod) =>
    (pod.status?.containerStatuses ?? []).some(
      (c) =>
        c.name === SOURCE_CONTAINER &&
        (c.state?.running !== undefined ||
          hasStartTime(c.state?.terminated?.startedAt) ||
          hasStartTime(c.lastState?.terminated?.startedAt) ||
          c.started === true),
    ),
  );
  return ending && !sourceStarted;
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
  if (input.deleting && input.op !== 'destroy' && jobNeverStarted(input.job, input.pods)) {
    // Waiting out the deadline for a Job that never ran keeps the state Secret and Lease for nothing. Never
    // the destroy: the deletion itself started it, and deleting it would start it again, and again.
    return {
      kind: 'delete',
      reason: 'UnstartedJobDeleted',
      message: `the object is being deleted and no pod of its ${input.op} Job ever started the source container`,
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
  const trouble =
    startTrouble(input.pods) ??
    (input.pullTroubleShown !== undefined && pullTroubleOutlived(input.job, input.pods)
      ? { reason: 'ImagePullBackOff' as const, message: input.pullTroubleShown }
      : undefined);
  if (trouble) {
    return {
      kind: 'watch',
      reason: trouble.reason,
      requeueAfterSeconds: Math.min(WAIT_TABLE[trouble.reason].requeueSeconds, ...untilNext),
      message: trouble.message,
    };
  }
  return {
    kind: 'watch',
    reason: 'JobActive',
    requeueAfterSeconds: Math.min(WAIT_TABLE.JobActive.requeueSeconds, ...untilNext),
  };
}
