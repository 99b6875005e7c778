import type { TargetStatus } from '../schemas/kinds/target.ts';
import { carriesBlockMove } from './block-move.ts';
import { jobUidOfPod } from './orphaned-pods.ts';
import type { JobView, PodView } from './views.ts';

/**
 * Pods as the step reads them: which pods belong to which Job, and which are still alive (DESIGN.md
 * section 5 step 7: a Terminating pod counts as alive until its phase is terminal).
 */

/**
 * The pods of one Job, by its UID (names can be reused after a delete): those it owns, and those an orphaning
 * delete of it took its owner reference off while it is still listed (their Job UID label names it,
 * src/core/orphaned-pods.ts), so its bookkeeping still reads their result.
 */
export function podsOfJob<P extends PodView>(job: JobView, pods: readonly P[]): P[] {
  const uid = job.metadata.uid;
  if (uid === undefined) return [];
  return pods.filter((pod) => jobUidOfPod(pod) === uid);
}

/**
 * A pod whose containers may still run: any phase but Succeeded and Failed, deleting or not; except a pod
 * deleted before any node took it, which never ran and never will (the scheduler skips deleted pods), even
 * while our result finalizer holds it in a non-terminal phase.
 */
export function isPodAlive(pod: PodView): boolean {
  if (pod.metadata.deletionTimestamp !== undefined && !pod.spec?.nodeName) return false;
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/** What {@link mayHavePods} reads of a snapshot. */
export interface PodEvidence {
  jobs: readonly unknown[];
  meta: { annotations?: Readonly<Record<string, string>> };
  status: Pick<TargetStatus, 'activeJob' | 'attempts' | 'lastRun' | 'waitReason'>;
}

/**
 * Whether the object may have pods, so the API guard (DESIGN.md section 5 step 7) must list them before a
 * start; false only for an object none of whose Jobs was ever seen: none listed, none recorded in the
 * status (`activeJob`, `attempts`, `lastRun`), no block-move annotation, and no wait for a previous
 * attempt's pod. Why that proves no pod (issue 22: the first Job-creating step skips the pod list):
 * pods of ours are a Job's (label `captf.io/owner-uid`), so an unlisted pod belongs to a deleted Job, and
 * every Job leaves a trace that outlives it: its start writes the block-move annotation before the create
 * and `activeJob` and `attempts` after it; its bookkeeping (the one before a prune, or a deadline
 * enforcement's delete) writes `lastRun`; the annotation goes only in a step that read the Jobs, and the
 * one that sees a deleted Job's pod still alive writes `WaitingForPreviousAttempt` (kept until a start).
 * The one trace-less case, a stuck Job (its start's status write lost) deleted with its per-run Secret
 * missing, leaves only pods that can never start: they cannot mount that Secret, whose name no later Job
 * reuses. A Job created after the read is the start's precondition's (the annotation's patch under the
 * version read, then a deterministic name), not the pod list's.
 */
export function mayHavePods(snap: PodEvidence): boolean {
  const { status } = snap;
  return (
    snap.jobs.length > 0 ||
    carriesBlockMove(snap.meta.annotations) ||
    status.activeJob !== undefined ||
    status.attempts !== undefined ||
    status.lastRun !== undefined ||
    status.waitReason === 'WaitingForPreviousAttempt'
  );
}
