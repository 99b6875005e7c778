import { LABELS, POD_RESULT_FINALIZER } from './job-labels.ts';
import { jobUidOfPod } from './orphaned-pods.ts';
import type { MetaView } from './views.ts';

/**
 * When our pod finalizer (`captf.io/result`, src/core/job-labels.ts) may go: once nothing will read the
 * pod's result any more. Bookkeeping reads a Job's pods once (DESIGN.md section 7); until then a deleted pod
 * must stay (C07 drain, C09 deadline), afterwards it must not linger Terminating (C13, C14), and the event
 * that says it is being deleted releases it (issue 23 item 2), not the next sweep.
 */

/**
 * A pod as the rule reads it (src/core/views.ts PodView): its `deletionTimestamp` is set once it was deleted
 * (drain, deadline, garbage collection), when only our finalizer may hold it.
 */
export interface ReleasePodView {
  metadata: Pick<MetaView, 'name' | 'labels' | 'ownerReferences' | 'finalizers' | 'deletionTimestamp'>;
}

/** One Job, as listed after the pods (so a pod whose Job is missing from the list really lost it). */
export interface ReleaseJobView {
  uid: string;
  /** The Job carries `captf.io/bookkept`, or this step just wrote it (section 5 step 3). */
  bookkept: boolean;
  /** The Job has a Complete or Failed condition. */
  finished: boolean;
  /** The Job has a deletionTimestamp (Foreground deletion by hand or by the garbage collector). */
  deleting: boolean;
}

/** Why a pod's finalizer is released. */
export type PodReleaseReason = 'JobBookkept' | 'JobPruned' | 'JobDeleting' | 'JobGone' | 'OwnerGone';
/** Why a pod keeps it (or has nothing to release). */
export type PodHoldReason = 'NoFinalizer' | 'AwaitingBookkeeping' | 'NotDeleted';

export type PodReleaseDecision =
  | { kind: 'release'; reason: PodReleaseReason }
  | { kind: 'keep'; reason: PodHoldReason };

/** The inputs of one release pass. */
export interface PodReleaseInput {
  pods: readonly ReleasePodView[];
  /** The Jobs that exist; a pod whose Job is absent here belongs to a Job that is gone. */
  jobs: readonly ReleaseJobView[];
  /** UIDs of the Jobs this pass prunes (deleted right after, with Background propagation, C13). */
  pruning?: readonly string[];
  /**
   * The object leaves our care in this pass (its finalizer goes, after every Job was bookkept): no step
   * will read any of its pods again.
   */
  ownerGone?: boolean;
}

/**
 * Whether one pod's finalizer goes, first match wins: no finalizer of ours → keep (nothing to do); its
 * owner object leaving our care → release; its Job (its owner, or for an orphaned pod of ours the one its
 * Job UID label names, src/core/orphaned-pods.ts) not listed → release; pruned → release; bookkept →
 * release once the pod is being deleted (a live one waits for its Job to go); the Job being deleted before
 * it finished → release; otherwise its result is still to be read → keep.
 */
export function decidePodRelease(
  pod: ReleasePodView,
  jobs: ReadonlyMap<string, ReleaseJobView>,
  pruning: ReadonlySet<string> = new Set(),
  ownerGone = false,
): PodReleaseDecision {
  if (!(pod.metadata.finalizers ?? []).includes(POD_RESULT_FINALIZER))
    return { kind: 'keep', reason: 'NoFinalizer' };
  // The finalize step bookkept every Job first (rule 0 waits for running ones); nothing reads these again.
  if (ownerGone) return { kind: 'release', reason: 'OwnerGone' };
  // Its Job's, also once that Job was deleted with orphaning while it is still listed (its bookkeeping may
  // still read the result, src/core/orphaned-pods.ts).
  const uid = jobUidOfPod(pod);
  const job = uid === undefined ? undefined : jobs.get(uid);
  if (uid === undefined || job === undefined) return { kind: 'release', reason: 'JobGone' };
  if (pruning.has(uid)) return { kind: 'release', reason: 'JobPruned' };
  // A live pod of a bookkept Job costs nothing held: it is released with its Job (pruned or gone), which
  // saves a write per run on the bookkeeping step.
  if (job.bookkept)
    return pod.metadata.deletionTimestamp === undefined
      ? { kind: 'keep', reason: 'NotDeleted' }
      : { kind: 'release', reason: 'JobBookkept' };
  // A Job deleted before it finished has no result to book (the step reports it interrupted, section 4);
  // holding its pods would also hold a Foreground deletion for ever. A finished one is still booked.
  if (job.deleting && !job.finished) return { kind: 'release', reason: 'JobDeleting' };
  return { kind: 'keep', reason: 'AwaitingBookkeeping' };
}

/** The pods whose finalizer goes, each with its reason, in input order. */
export function podsToRelease<P extends ReleasePodView>(
  input: Omit<PodReleaseInput, 'pods'> & { pods: readonly P[] },
): { pod: P; reason: PodReleaseReason }[] {
  const jobs = new Map(input.jobs.map((job) => [job.uid, job]));
  const pruning = new Set(input.pruning ?? []);
  return input.pods.flatMap((pod) => {
    const decision = decidePodRelease(pod, jobs, pruning, input.ownerGone === true);
    return decision.kind === 'release' ? [{ pod, reason: decision.reason }] : [];
  });
}

/**
 * A pod an event showed being deleted while it holds our finalizer: the step of its owner reads the pods
 * and releases what the rule above allows at once, instead of leaving it to the sweep (issue 23 item 2).
 */
export interface HeldPod {
  name: string;
  /** The owner object's UID from the pod's `captf.io/owner-uid` label. */
  ownerUid: string;
}

/** The metadata of a pod as an event's payload or a live read has it. */
export interface HeldPodMeta {
  name?: string;
  labels?: Readonly<Record<string, string>>;
  deletionTimestamp?: unknown;
  finalizers?: readonly string[];
}

/**
 * The held pod a pod's metadata describes: being deleted, holding our finalizer, labelled with its owner;
 * undefined otherwise (a live pod, one already released, a pod not ours). Every other pod event stays as
 * cheap as before: only this one makes its step read the pods.
 */
export function heldPodOf(meta: HeldPodMeta | undefined): HeldPod | undefined {
  const ownerUid = meta?.labels?.[LABELS.ownerUid];
  if (
    meta?.name === undefined ||
    ownerUid === undefined ||
    meta.deletionTimestamp === undefined ||
    meta.deletionTimestamp === null ||
    !(meta.finalizers ?? []).includes(POD_RESULT_FINALIZER)
  )
    return undefined;
  return { name: meta.name, ownerUid };
}

/**
 * Whether a held pod's owner is gone for good: no object of its name, or one of that name with another
 * UID (deleted and created again). Its result then has no reader left, whatever its Job says: release.
 */
export function heldPodOwnerGone(pod: HeldPod, objectUid: string | undefined): boolean {
  return objectUid === undefined || objectUid !== pod.ownerUid;
}
