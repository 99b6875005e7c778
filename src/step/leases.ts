import type { JobSlotScope } from '../adapters/redis/job-slots.ts';
import { type RunLeaseRole, type RunLeaseScope, runLeaseRoleOf } from '../adapters/redis/run-lease.ts';
import type { Unknown } from '../adapters/redis/unknown.ts';
import { TERMINATION_GRACE_SECONDS } from '../core/job-manifest.ts';
import type { JobRecord } from '../core/job-record.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import { isOwnJobName } from '../core/own-jobs.ts';
import { clusterOperationMessage } from '../core/planner/cluster-operation.ts';
import { type SlotScope, slotLimitsFor } from '../core/slot-shares.ts';
import type { ClusterLeaseFact, RunGuardSpec } from '../core/step-plan.ts';
import type { Op } from '../schemas/result.ts';
import type { StepConfig, StepRedis } from './deps.ts';

/**
 * The Redis guards of one run (DESIGN.md section 5 step 6): the run lease (every op), the cluster lease
 * (TerraformCluster apply/destroy) and the Job slots, all held under the Job's name. A lease held under
 * the name of a Job that is not running any more is stale (its release was lost to a crash or an outage):
 * it is released by its own token, so Redis never holds a run back that the API server says is over.
 *
 * A Job slot is healed only through its holder's lease, so a slot never outlives the lease held under the
 * same Job's name: slots are taken after the lease, re-taken on renewal only while the lease is this
 * Job's, and released before it. A crash between two of these calls leaves a lease without its slot, which
 * the next step heals, never a slot without a lease, which nothing would find before its TTL (deadline +
 * 900 s) frees it.
 */

/** The TTL backstop above the deadline: grace (600 s) plus 300 s (DESIGN.md section 5 step 6). */
export const LEASE_TTL_EXTRA_SECONDS = TERMINATION_GRACE_SECONDS + 300;

/** TTL of a run's lease and slots: `activeDeadlineSeconds + 600 + 300` s. */
export function leaseTtlSeconds(activeDeadlineSeconds: number): number {
  return activeDeadlineSeconds + LEASE_TTL_EXTRA_SECONDS;
}

/** Everything that names one run's guards. */
export interface RunGuard {
  scope: RunLeaseScope & { object: ObjectRef };
  role: RunLeaseRole;
  slots: JobSlotScope;
  ttlSeconds: number;
}

/** The guards of the run `spec` names, of `ref` (in Cluster API cluster `clusterName`, if any). */
export function runGuard(ref: ObjectRef, clusterName: string | undefined, spec: RunGuardSpec): RunGuard {
  const { op, job, activeDeadlineSeconds } = spec;
  return {
    scope: { object: ref, ...(clusterName !== undefined ? { clusterName } : {}) },
    role: runLeaseRoleOf(ref.kind, op, clusterName),
    slots: { namespace: ref.namespace, job, ...(clusterName !== undefined ? { clusterName } : {}) },
    ttlSeconds: leaseTtlSeconds(activeDeadlineSeconds),
  };
}

/** The outcome of taking a run's guards. */
export type GuardTake =
  | { kind: 'acquired' }
  | {
      kind: 'wait';
      reason:
        | 'WaitingForRunLease'
        | 'WaitingForClusterOperation'
        | 'WaitingForMachineOperations'
        | 'WaitingForJobSlot';
      message: string;
      /** `WaitingForJobSlot`: the slot set found full. */
      slotScope?: SlotScope;
    }
  | Unknown;

/** True for a lease holder that is one of this object's Jobs still running (`activeJobs`). */
type HolderIsLive = (holder: string) => boolean;

/**
 * Takes the run lease (and cluster lease) for `job`, then its Job slots; gives the lease back when no slot
 * is free. A lease held by a Job of this object that is no longer running is released by its token and the
 * take is tried once more. `wait` carries the section 6 reason; `unknown` means Redis did not answer (the
 * caller answers `unavailable`, having changed nothing it knows of).
 */
export async function takeRunGuards(
  redis: StepRedis,
  config: StepConfig,
  guard: RunGuard,
  job: string,
  op: Op,
  holderIsLive: HolderIsLive,
  afterLease: () => void,
): Promise<GuardTake> {
  let lease = await redis.runLeases.take(guard.scope, job, guard.role, guard.ttlSeconds);
  // Only this object's own Jobs may be healed: a cluster lease can be held by another object's Job.
  const { object } = guard.scope;
  if (
    lease.kind === 'held' &&
    !holderIsLive(lease.holder) &&
    isOwnJobName(object.kind, object.name, lease.holder)
  ) {
    // Slots first: a slot is only ever healed through its holder's lease (see the file's docstring).
    const freed = await redis.jobSlots.release({ ...guard.slots, job: lease.holder });
    if (freed.kind === 'unknown') return freed;
    const released = await redis.runLeases.release(guard.scope, { holder: lease.holder, fence: lease.fence });
    if (released.kind === 'unknown') return released;
    lease = await redis.runLeases.take(guard.scope, job, guard.role, guard.ttlSeconds);
  }
  if (lease.kind === 'unknown') return lease;
  if (lease.kind === 'held') {
    return {
      kind: 'wait',
      reason: 'WaitingForRunLease',
      message: `the run lease is held by ${lease.holder}`,
    };
  }
  if (lease.kind === 'cluster-busy') {
    return {
      kind: 'wait',
      reason: 'WaitingForClusterOperation',
      message: clusterOperationMessage(lease.holder),
    };
  }
  afterLease();
  if (lease.liveMemberLeases > 0) {
    // The cluster keeps its leases so no new machine operation starts, and waits for the running ones.
    return {
      kind: 'wait',
      reason: 'WaitingForMachineOperations',
      message: 'machine or pool applies or destroys of this cluster still run',
    };
  }
  const slot = await redis.jobSlots.take(guard.slots, slotLimitsFor(op, config), guard.ttlSeconds);
  if (slot.kind === 'unknown') return slot;
  if (slot.kind === 'full') {
    await releaseRunGuards(redis, guard, job);
    return {
      kind: 'wait',
      reason: 'WaitingForJobSlot',
      message: `every Job slot ${op} may use in the ${slot.scope} is taken (limit ${slot.limit})`,
      slotScope: slot.scope,
    };
  }
  return { kind: 'acquired' };
}

/**
 * Renews a running Job's guards (DESIGN.md section 5 step 4, C17). A take under the same holder refreshes
 * the TTL and re-creates a lease or slot lost to a Redis flush, in one atomic call each.
 */
export async function renewRunGuards(
  redis: StepRedis,
  guard: RunGuard,
  job: string,
): Promise<'renewed' | 'held-by-other' | Unknown> {
  const lease = await redis.runLeases.take(guard.scope, job, guard.role, guard.ttlSeconds);
  if (lease.kind === 'unknown') return lease;
  // A step that read the Job running may renew after another step bookkept it: the lease then names a
  // finished Job and is healed, but a slot re-taken without the lease would be found by nothing.
  if (lease.kind !== 'acquired') return 'held-by-other';
  const slot = await redis.jobSlots.take(
    guard.slots,
    // A running Job keeps its slot whatever the limits say now; the limits only gate new starts.
    { installation: Number.MAX_SAFE_INTEGER, cluster: Number.MAX_SAFE_INTEGER },
    guard.ttlSeconds,
  );
  if (slot.kind === 'unknown') return slot;
  return 'renewed';
}

/**
 * Releases `job`'s run lease (and cluster lease / member entry) and slots. Releasing what is not held is a
 * no-op; the lease is released only under its own token (C17).
 */
export async function releaseRunGuards(
  redis: StepRedis,
  guard: RunGuard,
  job: string,
): Promise<'released' | Unknown> {
  const slot = await redis.jobSlots.release(guard.slots);
  if (slot.kind === 'unknown') return slot;
  const current = await redis.runLeases.read(guard.scope);
  if (current.kind === 'unknown') return current;
  if (current.kind === 'held' && current.token.holder === job) {
    const released = await redis.runLeases.release(guard.scope, current.token);
    if (released.kind === 'unknown') return released;
  }
  return 'released';
}

/**
 * Heals a run lease whose release was lost (a crash or a Redis outage after bookkeeping, DESIGN.md section
 * 1: "Redis holds nothing that cannot be rebuilt from the API server"). A step with nothing running reads
 * the object's run lease; held under the name of a Job that is not running, it is released by its own
 * token (never someone else's, C17), and that Job's slots with it. Costs one Redis read when clean.
 * Answers whether a lease was released.
 */
export async function healStaleLease(
  redis: StepRedis,
  ref: ObjectRef,
  clusterName: string | undefined,
  records: readonly JobRecord[],
): Promise<boolean> {
  const scope = { object: ref, ...(clusterName !== undefined ? { clusterName } : {}) };
  const current = await redis.runLeases.read(scope);
  if (current.kind !== 'held') return false;
  const holder = current.token.holder;
  if (records.some((record) => record.name === holder && !record.finished)) return false;
  if (!isOwnJobName(ref.kind, ref.name, holder)) return false;
  const freed = await redis.jobSlots.release({
    namespace: ref.namespace,
    job: holder,
    ...(clusterName !== undefined ? { clusterName } : {}),
  });
  if (freed.kind !== 'released') return false;
  const released = await redis.runLeases.release(scope, current.token);
  return released.kind === 'released';
}

/**
 * A member's cluster lease and its own run lease as Redis holds them (one read of both, no write): what a
 * `WaitingForClusterOperation` found again is decided from (src/core/planner/cluster-operation.ts).
 */
export async function readClusterLease(
  redis: StepRedis,
  ref: ObjectRef,
  clusterName: string,
): Promise<ClusterLeaseFact> {
  const leases = await redis.runLeases.readMember({ object: ref, clusterName });
  if (leases.kind === 'unknown') return 'unknown';
  return { clusterHolder: leases.clusterLease?.holder, runLeaseHeld: leases.run !== undefined };
}
