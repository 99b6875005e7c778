/**
 * The preamble of a step (DESIGN.md section 5 step 2): objects managed by someone else are left alone, an
 * object without our finalizer gets it first (and the step stops, so the next one reads the write), and
 * Cluster API pause lets bookkeeping run but starts nothing (the pause gate, src/core/gates.ts).
 */

/** Our finalizer: the object stays until its destroy ran (DESIGN.md section 3 rows 1-2). */
export const FINALIZER = 'infrastructure.cluster.x-k8s.io/captf';

/** Cluster API's marker for infrastructure managed outside the provider (the InfraCluster contract). */
export const MANAGED_BY_ANNOTATION = 'cluster.x-k8s.io/managed-by';

/** What the preamble decided. */
export type Preamble =
  | { kind: 'proceed' }
  | { kind: 'leave-alone'; reason: 'ExternallyManaged'; message: string }
  | { kind: 'add-finalizer'; reason: 'FinalizerAdded'; finalizers: string[] }
  | { kind: 'not-ours'; reason: 'DeletingWithoutFinalizer' };

/** The object metadata the preamble reads. */
export interface PreambleMeta {
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
}

/** The preamble's verdict on an object's metadata (pure). */
export function preamble(meta: PreambleMeta): Preamble {
  const managedBy = meta.annotations?.[MANAGED_BY_ANNOTATION];
  if (managedBy !== undefined) {
    return {
      kind: 'leave-alone',
      reason: 'ExternallyManaged',
      message: `managed by ${managedBy || 'another controller'}`,
    };
  }
  const finalizers = meta.finalizers ?? [];
  const deleting = meta.deletionTimestamp !== undefined;
  if (finalizers.includes(FINALIZER)) return { kind: 'proceed' };
  // Deleting without our finalizer: it was removed (destroy done, or by hand); nothing is ours to do.
  if (deleting) return { kind: 'not-ours', reason: 'DeletingWithoutFinalizer' };
  return { kind: 'add-finalizer', reason: 'FinalizerAdded', finalizers: [...finalizers, FINALIZER] };
}
