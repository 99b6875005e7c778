import { LABELS } from './job-labels.ts';
import type { MetaView, PodView } from './views.ts';

/** What the ownership rules read of a pod. */
type PodOwnership = { metadata: Pick<MetaView, 'labels' | 'ownerReferences'> };

/**
 * What a Job of ours deleted with orphaning leaves (DESIGN.md section 7): `propagationPolicy: Orphan`,
 * `kubectl delete --cascade=orphan`, and batch/v1's own default for a Job deleted without a propagation
 * policy (any client that does not set one) take the Job's owner reference off its pods and its per-run
 * Secret, so the garbage collector never deletes them. The per-run Secret goes by name with the record of
 * the lost run (src/core/bookkeeping.ts `recordLostActiveJob`); which of the pods go is decided here (the
 * step's plan and the sweep delete them, each under the UID and version it judged).
 */

/**
 * The label the Job controller puts on every pod of a Job: the Job's UID. It outlives the owner reference an
 * orphaning delete takes off, so a pod stays its Job's while that Job is still listed (the garbage collector
 * orphans the pods before it lets the Job go); `controller-uid` is its older spelling.
 */
const JOB_UID_LABELS = ['batch.kubernetes.io/controller-uid', 'controller-uid'] as const;

/** The UID of the Job that made the pod, from the Job controller's label; undefined when it has none. */
export function jobUidLabelOf(pod: PodOwnership): string | undefined {
  const labels = pod.metadata.labels ?? {};
  for (const key of JOB_UID_LABELS) if (labels[key] !== undefined) return labels[key];
  return undefined;
}

/**
 * Whether the pod is one of our Job pods (`captf.io/managed=true`, with its object's `captf.io/owner-uid`)
 * that no controller owns any more: its Job was deleted with orphaning (the Job controller sets itself as the
 * controlling owner of every pod it creates). A pod some other controller owns is never ours to delete.
 */
export function isOrphanedPod(pod: PodOwnership): boolean {
  const { labels, ownerReferences } = pod.metadata;
  return (
    labels?.[LABELS.managed] === 'true' &&
    labels[LABELS.ownerUid] !== undefined &&
    !(ownerReferences ?? []).some((owner) => owner.controller === true)
  );
}

/**
 * The UID of the Job a pod is one of (one home for it: the step's reads, the result finalizer's release):
 * the Job that owns it, or, once that Job was deleted with orphaning, the one the Job controller's label
 * names on a pod of ours no controller owns. Undefined for a pod of no Job.
 */
export function jobUidOfPod(pod: PodOwnership): string | undefined {
  const owner = pod.metadata.ownerReferences?.find((ref) => ref.kind === 'Job')?.uid;
  if (owner !== undefined) return owner;
  return isOrphanedPod(pod) ? jobUidLabelOf(pod) : undefined;
}

/** Phases in which the pod's `source` container, and so OpenTofu, does not run: never started, or ended. */
const NOT_RUNNING_PHASES: ReadonlySet<string> = new Set(['Pending', 'Succeeded', 'Failed']);

/**
 * Whether the pod is an orphaned pod to delete: one whose `source` container does not run (phase Pending:
 * it never started, whether or not a node took the pod, and a pod left Pending would still start, a run
 * nobody watches, or stay Pending for ever once its per-run Secret went; Succeeded or Failed: it ended),
 * unless being deleted already, read without a UID, or made by a Job still listed (`listedJobUids`): that
 * Job's bookkeeping may still read the pod's result, and the pod goes once the Job does. A pod that runs
 * (phase Running, or Unknown on a lost node) is left to end: it may still write the state, so the API guard
 * waits for it (section 5 step 7), and its own deadline (the Job's, which the pod template carries,
 * src/core/job-manifest.ts) ends it now that the Job that would have is gone.
 */
export function isOrphanToDelete(pod: PodView, listedJobUids: ReadonlySet<string>): boolean {
  const jobUid = jobUidLabelOf(pod);
  return (
    isOrphanedPod(pod) &&
    pod.metadata.uid !== undefined &&
    pod.metadata.deletionTimestamp === undefined &&
    !(jobUid !== undefined && listedJobUids.has(jobUid)) &&
    NOT_RUNNING_PHASES.has(pod.status?.phase ?? 'Pending')
  );
}

/** The pods {@link isOrphanToDelete} deletes, in input order. */
export function orphanedPodsToDelete<P extends PodView>(
  pods: readonly P[],
  listedJobUids: ReadonlySet<string>,
): P[] {
  return pods.filter((pod) => isOrphanToDelete(pod, listedJobUids));
}
