import type { CapiClusterView } from './cluster-api.ts';
import type { OwningCluster } from './snapshot.ts';
import type { StepPlan } from './step-plan.ts';

/**
 * The facts a machine or pool reads of its cluster (DESIGN.md section 5 step 2; issue 22), pushed into a
 * cache by the events and steps that read them instead of pulled by every step of every member: the
 * owning TerraformCluster's view and the Cluster API Cluster's, each with the version it came from. Pure.
 */

/** The object a fact was read from; undefined on a fact that says the object does not exist. */
export interface FactVersion {
  uid: string;
  resourceVersion: string;
}

/** One fact: the view (undefined: no such object) and the version of the object it came from. */
export interface Fact<V> {
  view: V | undefined;
  version: FactVersion | undefined;
}

/** What a member reads of its cluster; a part is undefined when it is not known (not cached). */
export interface ClusterFacts {
  /** The TerraformCluster labelled with the cluster's name. */
  owning?: Fact<OwningCluster>;
  /** The Cluster API Cluster of that name: pause and infrastructure. */
  capi?: Fact<CapiClusterView>;
}

/**
 * Whether a plan made from cached facts may be carried out as it is: only a rest or no move that writes
 * nothing but the object's status and Events. Anything else (a start, and as well a watch that adopts a
 * Job with the cluster's exports in its run config, the finalizer step that sets up the runner identity
 * unless paused, a deletion's destroy or finalizer, a Job deleted, a bookkeeping, a TerraformPlan, a
 * block-move annotation) is planned again from a live read of the cluster: a cached fact may be behind by
 * one event, and only a wait or a status is put right by that event (it updates the cache before it wakes
 * the members). One rule over the whole plan rather than per move: the cheap steps are the waits and
 * rests, and every other step is rare enough to pay the two reads.
 */
export function cachedFactsSuffice(plan: StepPlan): boolean {
  return (
    (plan.move.kind === 'rest' || plan.move.kind === 'none') &&
    plan.bookkept.length === 0 &&
    plan.plans.length === 0 &&
    plan.spec === undefined &&
    plan.prune.length === 0 &&
    plan.releasePods.length === 0 &&
    plan.blockMove === undefined
  );
}
