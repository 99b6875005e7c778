import type { V1Toleration } from '@kubernetes/client-node';

/**
 * Taint key of a dedicated node (Kubernetes' "dedicated nodes" pattern): `captf.io/dedicated=<node>:NoSchedule`.
 * The scheduler binds only pods that tolerate it, so a test run's node on a shared API server runs that
 * run's pods and never the Pending leftovers of other files.
 */
export const DEDICATED_TAINT_KEY = 'captf.io/dedicated';

/** The toleration a pod needs to be scheduled on dedicated node `nodeName`. */
export function dedicatedToleration(nodeName: string): V1Toleration {
  return { key: DEDICATED_TAINT_KEY, operator: 'Equal', value: nodeName, effect: 'NoSchedule' };
}
