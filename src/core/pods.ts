import type { JobView, PodView } from './views.ts';

/**
 * Pods as the step reads them: which pods belong to which Job, and which are still alive (DESIGN.md
 * section 5 step 7: a Terminating pod counts as alive until its phase is terminal).
 */

/** The pods of one Job: controlled by its UID (names can be reused after a delete). */
export function podsOfJob<P extends PodView>(job: JobView, pods: readonly P[]): P[] {
  const uid = job.metadata.uid;
  return pods.filter((pod) =>
    pod.metadata.ownerReferences?.some((owner) => owner.kind === 'Job' && owner.uid === uid),
  );
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
