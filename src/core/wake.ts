import type { ObjectRef } from './object-ref.ts';
import type { SlotScope } from './slot-shares.ts';

/**
 * What wakes a waiting object (DESIGN.md section 6): a wait that depends on another object, a Secret, a
 * lease or a Job slot registers under what it waits for (the Redis `dependents` set of that source), and
 * the event or step that ends the wait takes the waiters and brings their requeue to now. The requeue stays
 * the guarantee (a lost wake costs latency, never a result), so such a wait polls only at its long safety
 * requeue. Pure.
 */

/**
 * One thing a wait can be woken by, named like a schedule member (`kind/namespace/name`):
 * - one of our objects (a member waits for its TerraformCluster's infrastructure);
 * - `Secret`: a Secret the spec reads or the bootstrap data Secret, woken by the Secret's watch event;
 * - `RunLeases`: the run, cluster and member leases of one lease group (src/adapters/redis/keys.ts), the
 *   namespace and the Cluster API cluster's name, or `<kind>/<name>` of an object of no cluster;
 * - `JobSlots`: the Job slots of the installation (namespace and name empty) or of one Cluster API cluster.
 * The leases and slots are woken by the step that releases them (bookkeeping a finished Job).
 */
export type WakeSource =
  | ObjectRef
  | { kind: 'Secret' | 'RunLeases' | 'JobSlots'; namespace: string; name: string };

/** A wake a step sends: the waiters of `source`, all of them or at most `limit` (one per freed slot). */
export interface Wake {
  source: WakeSource;
  limit?: number;
}

/** The Secret `name` in `namespace`. */
export function secretSource(namespace: string, name: string): WakeSource {
  return { kind: 'Secret', namespace, name };
}

/** The lease group of `ref` (its Cluster API cluster when it has one): every lease wait of it waits here. */
export function runLeasesSource(ref: ObjectRef, clusterName: string | undefined): WakeSource {
  return { kind: 'RunLeases', namespace: ref.namespace, name: clusterName ?? `${ref.kind}/${ref.name}` };
}

/** The wake source of one slot set: the installation's (cluster-wide, no name) or cluster `clusterName`'s. */
function slotSetSource(scope: SlotScope, namespace: string, clusterName: string): WakeSource {
  return scope === 'installation'
    ? { kind: 'JobSlots', namespace: '', name: '' }
    : { kind: 'JobSlots', namespace, name: clusterName };
}

/** The slot sets a start needs: the installation's, and its cluster's when it has one. */
function slotScopesOf(clusterName: string | undefined): SlotScope[] {
  return clusterName === undefined ? ['installation'] : ['installation', 'cluster'];
}

/** The Job slots a start of `ref` needs: the installation's, and its cluster's when it has one. */
export function jobSlotSources(namespace: string, clusterName: string | undefined): WakeSource[] {
  return slotScopesOf(clusterName).map((scope) => slotSetSource(scope, namespace, clusterName ?? ''));
}

/**
 * The slot sets of `jobSlotSources` that were found full (`scopes`): what a `WaitingForJobSlot` registers
 * under. Only the full ones: a release wakes one waiter per set, and a waiter held by its cluster's slots
 * would take (and waste) the wake of a freed installation slot. When none of `scopes` applies (none known
 * full), every set, so the wait is never left without a wake.
 */
export function fullJobSlotSources(
  namespace: string,
  clusterName: string | undefined,
  scopes: readonly SlotScope[],
): WakeSource[] {
  const needed = slotScopesOf(clusterName);
  const full = needed.filter((scope) => scopes.includes(scope));
  return (full.length > 0 ? full : needed).map((scope) => slotSetSource(scope, namespace, clusterName ?? ''));
}

/**
 * What the release of one finished Job's leases and slots wakes: every waiter of its lease group (a few
 * objects: those of one cluster), and one waiter per slot set, since one slot was freed (waking every slot
 * waiter of a fleet for one slot would cost a step each and start one).
 */
export function releaseWakes(ref: ObjectRef, clusterName: string | undefined): Wake[] {
  return [
    { source: runLeasesSource(ref, clusterName) },
    ...jobSlotSources(ref.namespace, clusterName).map((source) => ({ source, limit: 1 })),
  ];
}
