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
 * Whether a plan made from cached facts may be carried out as it is: unless it starts a Job, changes the
 * finalizers, deletes a Job, adopts a running Job or writes a TerraformPlan, since those act on the
 * cluster's facts: a start and an adoption put its exports and Job policy into the run, the finalizer step
 * sets up the runner identity unless paused and a deletion's destroy or finalizer removal waits on pause, a
 * Job is deleted at the policy's deadline, and a pending plan is superseded by the inputs hash the exports
 * are part of. What is left (a wait or rest, the status and Events, a running Job watched, finished Jobs
 * bookkept with the Cluster API contract fields they write into the spec, prunes, pods released or,
 * orphaned, deleted, a lost run's Secret, the block-move annotation removed) does not depend on them, or,
 * for a wait in the status, is put right by the event that changes them: that event updates the cache
 * before it wakes the members. The contract fields
 * come from the run's outputs, the spec and whether Cluster API drives the object (src/core/record-run.ts),
 * and bookkeeping goes on under pause (DESIGN.md section 6). Only a labelled object with no Cluster API
 * owner or clone annotation learns that from a cluster fact (whether its Cluster exists), and a live read
 * would narrow, not close, the race with that Cluster's creation: its event puts the cache right as it
 * does for a wait. Everything else is planned again from a live read of the cluster
 * (src/step/read-memo.ts: the object, its Secrets and its Jobs are not read again).
 */
export function cachedFactsSuffice(plan: StepPlan): boolean {
  const { move } = plan;
  const moveSuffices =
    move.kind === 'rest' || move.kind === 'none' || (move.kind === 'watch' && move.adopt === undefined);
  return moveSuffices && plan.plans.length === 0;
}
