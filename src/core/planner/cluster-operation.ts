import type { Op } from '../../schemas/result.ts';
import { keptWithoutJobs } from '../jobs-read.ts';
import { waitStatus } from '../move-status.ts';
import { resolveRunInputs } from '../run-inputs.ts';
import type { Planned } from '../step-plan.ts';
import { waitFor } from '../wait-table.ts';
import { runLeasesSource } from '../wake.ts';
import { finish } from './assemble.ts';
import { type Base, waitOutcome } from './context.ts';

/**
 * A machine or pool held back by its cluster's operation (DESIGN.md sections 5 step 6 and 6): the
 * TerraformCluster's apply or destroy holds the cluster lease, and no member apply, destroy, drift or
 * refresh starts until it is released. The release wakes the members (src/core/wake.ts); between the wait
 * and the wake, a member's safety requeue finds the same wait again, and this decides it from the lease
 * itself (its two keys, read in one Redis round trip beside the Job slots every start reads) rather than
 * from a start planned over the listed Jobs and the cluster read live.
 */

/** The wait's message, as the start that met the lease writes it and as the wait found again keeps it. */
export function clusterOperationMessage(holder: string): string {
  return `the cluster's apply or destroy runs (${holder})`;
}

/**
 * The `WaitingForClusterOperation` the status records, found again from the object alone (its Jobs
 * unlisted, src/core/jobs-read.ts): kept, writing nothing, when the start got past every gate before the
 * guards (`planned` is the start, or a read only a start past them asks for: the state, the pods, a lock
 * holder; with the Jobs unlisted there is no record to bookkeep or prune, and a held pod lists them, so no
 * rest asks for the pods), its inputs resolve (no Secret missing or not opted in: from the snapshot alone),
 * the cluster lease is still held by the same Job and the member's own run lease is free, which is what the
 * take answers a member then (src/adapters/redis/scripts.ts `captfRunTake`). A read of the lease when it is
 * not known yet; undefined (plan from the listed Jobs) for anything else: another wait, another holder (the
 * message changes), a free cluster lease, a held run lease, Redis not answering. What the unlisted step
 * does not read (the Jobs, the pods, the state Secret of a provisioned object) matters only to a start,
 * which is planned from them once the lease is released; a state Secret lost meanwhile is reported then.
 * Pure.
 */
export function keptClusterOperationWait(base: Base, planned: Planned, op: Op): Planned | undefined {
  const { planning } = base;
  const { snap, facts } = planning;
  if (base.status.waitReason !== 'WaitingForClusterOperation') return undefined;
  if (snap.ref.kind === 'TerraformCluster' || snap.clusterName === undefined) return undefined;
  const gatesPassed =
    planned.kind === 'read'
      ? planned.read === 'state' || planned.read === 'pods' || planned.read === 'lock-holder'
      : planned.move.kind === 'start';
  if (!gatesPassed) return undefined;
  const inputs = resolveRunInputs(snap, op, planning.policy, {}, facts.config.stateEncryption);
  if (inputs.kind !== 'resolved') return undefined;
  const lease = facts.clusterLease;
  if (lease === undefined) return { kind: 'read', read: 'cluster-lease' };
  if (lease === 'unknown' || lease.runLeaseHeld || lease.clusterHolder === undefined) return undefined;
  const wait = waitFor('WaitingForClusterOperation', {
    now: facts.now,
    uid: snap.uid,
    op,
    message: clusterOperationMessage(lease.clusterHolder),
  });
  // No stale lease to heal: the run lease was just read free.
  return keptWithoutJobs(
    finish(
      base,
      waitStatus(planning.statusContext, base.status, wait),
      { kind: 'rest', healLease: false },
      {
        ...waitOutcome(base, wait),
        waitsFor: [runLeasesSource(snap.ref, snap.clusterName)],
      },
      true,
    ),
  );
}
