import { isPodAlive } from './pods.ts';
import type { PodView } from './views.ts';

/**
 * What a Job of ours deleted with orphaning leaves (DESIGN.md section 7): `propagationPolicy: Orphan`,
 * `kubectl delete --cascade=orphan`, and batch/v1's own default for a Job deleted without a propagation
 * policy (any client that does not set one) take the Job's owner reference off its pods and its per-run
 * Secret, so the garbage collector never deletes them. The per-run Secret goes by name with the record of
 * the lost run (src/core/bookkeeping.ts `recordLostActiveJob`); which of the pods go, once they no longer
 * run, is decided here (the step's plan and the sweep delete them).
 */

/**
 * Whether no Job owns the pod any more: its Job was deleted with orphaning (the Job controller sets its
 * owner reference on every pod it creates).
 */
export function isOrphanedPod(pod: Pick<PodView, 'metadata'>): boolean {
  return !(pod.metadata.ownerReferences ?? []).some((owner) => owner.kind === 'Job');
}

/**
 * The orphaned pods to delete, in input order, unless being deleted already: those that ended, and those no
 * node took yet (they never ran; left, the scheduler would still start one, a run nobody watches). One on a
 * node that has not ended is left to end: it may still write the state, so the API guard waits for it
 * (section 5 step 7), and its own deadline (the Job's, which the pod template carries,
 * src/core/job-manifest.ts) ends it now that the Job that would have is gone.
 */
export function orphanedPodsToDelete<P extends PodView>(pods: readonly P[]): P[] {
  return pods.filter(
    (pod) =>
      isOrphanedPod(pod) &&
      pod.metadata.deletionTimestamp === undefined &&
      (!pod.spec?.nodeName || !isPodAlive(pod)),
  );
}
