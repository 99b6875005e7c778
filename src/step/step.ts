import { isKubeError, type KubeError } from '../adapters/kube/errors.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { JobSlotUsage } from '../adapters/redis/job-slots.ts';
import { cachedFactsSuffice } from '../core/cluster-facts.ts';
import { describePlan } from '../core/describe-plan.ts';
import { POD_RESULT_FINALIZER } from '../core/job-labels.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import { planStep } from '../core/planner.ts';
import { type HeldPod, heldPodOwnerGone } from '../core/pod-release.ts';
import { snapshotRedactor } from '../core/run-inputs.ts';
import type { Snapshot } from '../core/snapshot.ts';
import { checkedStateSecret } from '../core/state-evidence.ts';
import {
  echoStartsNextStep,
  outcomeOf,
  type StepOutcome,
  UNAVAILABLE_RETRY_SECONDS,
} from '../core/step-outcome.ts';
import type { ClusterLeaseFact, PlanFacts, StepPlan } from '../core/step-plan.ts';
import {
  recordsRefusal,
  refusalEvent,
  refusalOf,
  refusedStatus,
  withoutRefusal,
} from '../core/write-refusal.ts';
import { type ClusterFactsCache, clusterFactsCacheOf, NO_CLUSTER_FACTS } from './cluster-facts.ts';
import type { ReconcileStep, StepOptions } from './contract.ts';
import type { StepDeps } from './deps.ts';
import { FailpointAbort } from './failpoints.ts';
import { readClusterLease } from './leases.ts';
import { conflict, emitEvents, ObjectWrites, type Performance, type Performed, perform } from './perform.ts';
import { readPods, readSnapshot, runSecretExists, type SnapshotOptions, withJobs } from './read.ts';
import { memoReader } from './read-memo.ts';
import { MAX_SKIPPED_JOB_NAMES } from './start-job.ts';
import { readStateContent } from './state-content.ts';
import { type KeptStepLock, keepStepLock } from './step-lock.ts';
import { objectFiguresOf } from './step-metrics.ts';
import { asPodView } from './views.ts';

/**
 * The reconcile step (DESIGN.md section 5) as read → plan → perform: take the step lock, read the object
 * live, plan the whole step (src/core/planner.ts, pure; it asks for the pods, the Job slot usage or a
 * per-run Secret only when it needs them), carry the plan out in the crash-safe order (src/step/perform.ts),
 * release the lock. The caller settles the outcome into the HTTP answer, the log line and the requeue
 * (src/settle): this module schedules nothing itself. A dry run reads and plans the same way, then
 * describes the plan (src/core/describe-plan.ts) instead of performing it.
 */

/** Most plans a step makes: the first, and one more after a refused recording (section 7). */
const MAX_PLANS = 2;

/** Builds the step over its dependencies. */
export function createReconcileStep(deps: StepDeps): ReconcileStep {
  return async (ref: ObjectRef, options: StepOptions = {}): Promise<StepOutcome> => {
    if (options.dryRun === true) return guarded(ref, () => explain(deps, ref, options));
    const lock = await deps.redis.takeStepLock(ref);
    if (lock.kind === 'unknown')
      return outcomeOf(ref, 'Unavailable', {
        requeueAfterSeconds: UNAVAILABLE_RETRY_SECONDS,
        message: `take the step lock: ${lock.cause.message}`,
      });
    if (lock.kind === 'held') return outcomeOf(ref, 'StepLockHeld');
    deps.failpoints.hit('after-step-lock');
    const kept = keepStepLock(deps.redis, ref, lock.token);
    try {
      return await guarded(ref, () => reconcile(deps, ref, kept, options));
    } finally {
      await kept.stop();
      // A real crash never gets here: its lock, no longer extended, expires after its 30 s.
      await deps.redis.releaseStepLock(ref, lock.token);
    }
  };
}

/**
 * Runs a step body and maps API failures to outcomes: an outage answers `unavailable` (nothing more was
 * changed), a Conflict asks for a prompt retry, a refusal waits. A failpoint passes through untouched, as a
 * crash would; anything else is a bug and is thrown.
 */
async function guarded(ref: ObjectRef, body: () => Promise<StepOutcome>): Promise<StepOutcome> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof FailpointAbort || !isKubeError(error)) throw error;
    if (error.outage)
      return outcomeOf(ref, 'Unavailable', {
        requeueAfterSeconds: error.retryAfterSeconds ?? UNAVAILABLE_RETRY_SECONDS,
        message: error.message,
      });
    if (error.code === 'Conflict') return outcomeOf(ref, 'Conflict', { message: error.message });
    const { wait, message } = refusalOf(`${error.code}: ${error.message}`, error.causes);
    return outcomeOf(ref, wait, { message });
  }
}

/**
 * What planning reads beyond the snapshot: the API server (the reader only), the Job slots in use and a
 * member's cluster lease (Redis). The step passes its own; `kubectl captf why` passes the caller's reader
 * and no Redis: no slot in use, and a lease not known, so it plans a lease wait from the Jobs
 * (src/plugin/main.ts).
 */
export interface PlanReads {
  reader: KubeReader;
  /** Job slots in use per installation and per the object's Cluster API cluster (Redis, section 5). */
  slotUsage(cluster?: { namespace: string; name: string }): Promise<JobSlotUsage>;
  /** A member's cluster lease and own run lease (Redis, section 5 step 6); `unknown` when not answered. */
  clusterLease(ref: ObjectRef, clusterName: string): Promise<ClusterLeaseFact>;
  /**
   * The snapshot read again with its cluster facts live (and cached), for a plan made from cached facts
   * that does more than wait (src/core/cluster-facts.ts); undefined when the object is gone. Absent where
   * nothing is cached.
   */
  liveSnapshot?(snap: Snapshot): Promise<Snapshot | undefined>;
}

/** The step's cluster facts cache; a dry run reads it and writes nothing. */
function clusterFactsOf(deps: StepDeps, writes: boolean): ClusterFactsCache {
  const store = deps.redis.clusterFacts;
  return store ? clusterFactsCacheOf(store, { writes }) : NO_CLUSTER_FACTS;
}

function planReadsOf(deps: StepDeps, read: SnapshotOptions, snapshotReader: KubeReader): PlanReads {
  const { reader } = deps.kube;
  const cache = read.clusterFacts ?? NO_CLUSTER_FACTS;
  return {
    reader,
    slotUsage: (cluster) => deps.redis.jobSlots.usage(cluster),
    clusterLease: (ref, clusterName) => readClusterLease(deps.redis, ref, clusterName),
    liveSnapshot: async (snap) => {
      const live = await readSnapshot(snapshotReader, snap.ref, {
        ...read,
        clusterFacts: { ...cache, read: async () => ({}) },
      });
      return live && withListedJobs(live, snap);
    },
  };
}

/**
 * `live` with the Jobs `earlier` listed in this very step, when `live` left them unread: the re-read is
 * about the cluster, and listing the same Jobs twice in one step would tell nothing new. A re-read that
 * lists them gets the earlier list from the step's memo (src/step/read-memo.ts); this covers the one that
 * skips them (an object at rest, src/core/jobs-read.ts) after the planner listed them itself.
 */
function withListedJobs(live: Snapshot, earlier: Snapshot): Snapshot {
  if (live.jobsUnread !== true || earlier.jobsUnread === true || live.uid !== earlier.uid) return live;
  const { jobsUnread: _unread, ...rest } = live;
  return { ...rest, jobs: earlier.jobs, records: earlier.records };
}

/** The facts the planner asks for, read one by one until it has a plan; answers the plan and its facts. */
async function planWithReads(
  source: PlanReads,
  facts: PlanFacts,
): Promise<{ plan: StepPlan; facts: PlanFacts } | { outcome: StepOutcome }> {
  let current = facts;
  // Each fact is read at most once: the Jobs, pods, slots, the watched Job's Secret, the state Secret, a
  // lock holder, the cluster facts live, a member's cluster lease.
  for (let reads = 0; reads <= 8; reads += 1) {
    const planned = planStep(current);
    if (planned.kind === 'plan') {
      if (current.snap.clusterFactsCached !== true || cachedFactsSuffice(planned) || !source.liveSnapshot)
        return { plan: planned, facts: current };
      const live = await source.liveSnapshot(current.snap);
      if (live === undefined) return { outcome: outcomeOf(current.snap.ref, 'ObjectGone') };
      current = { ...current, snap: live };
      continue;
    }
    const { snap } = current;
    switch (planned.read) {
      case 'jobs':
        current = { ...current, snap: await withJobs(source.reader, snap) };
        break;
      case 'pods':
        current = { ...current, pods: await readPods(source.reader, snap) };
        break;
      case 'slots': {
        const usage = await source.slotUsage(
          snap.clusterName !== undefined
            ? { namespace: snap.ref.namespace, name: snap.clusterName }
            : undefined,
        );
        if (usage.kind === 'unknown')
          return {
            outcome: outcomeOf(snap.ref, 'Unavailable', {
              requeueAfterSeconds: UNAVAILABLE_RETRY_SECONDS,
              message: `read the Job slots: ${usage.cause.message}`,
            }),
          };
        current = { ...current, slots: { installation: usage.installation, cluster: usage.cluster } };
        break;
      }
      case 'state': {
        const where = checkedStateSecret(snap);
        // The planner asks only when it knows where; without a place no state can be proven absent.
        current = {
          ...current,
          state: where ? await readStateContent(source.reader, where) : 'unreadable',
        };
        break;
      }
      case 'cluster-lease':
        current = {
          ...current,
          clusterLease:
            snap.clusterName === undefined
              ? 'unknown'
              : await source.clusterLease(snap.ref, snap.clusterName),
        };
        break;
      case 'lock-holder': {
        const name = planned.pod ?? '';
        const pod = await source.reader.getPod(snap.ref.namespace, name);
        current = { ...current, lockHolder: { name, pod: pod ? asPodView(pod) : undefined } };
        break;
      }
      case 'run-secret': {
        const active = snap.records.find((r) => !r.finished && !r.bookkept);
        current = {
          ...current,
          runSecretExists: active
            ? await runSecretExists(source.reader, snap.ref.namespace, active.name)
            : false,
        };
        break;
      }
    }
  }
  throw new Error(`plan step of ${facts.snap.ref.name}: the planner kept asking for facts`);
}

/** The planner's facts; a held pod only when it belongs to this very object (same UID). */
function factsOf(deps: Pick<StepDeps, 'clock' | 'config'>, snapshot: Snapshot, heldPod?: HeldPod): PlanFacts {
  return {
    snap: snapshot,
    now: new Date(deps.clock.nowMs()),
    config: deps.config,
    ...(heldPod !== undefined && !heldPodOwnerGone(heldPod, snapshot.uid) ? { heldPod } : {}),
  };
}

/**
 * How a step reads its object: its Jobs left out at rest (src/core/jobs-read.ts) unless the caller says a
 * Job may have changed (`listJobs`: a Job's or pod's event, the sweep) or a held pod is to be judged.
 */
function snapshotOptions(options: StepOptions): SnapshotOptions {
  return { skipJobsAtRest: options.listJobs !== true && options.heldPod === undefined };
}

async function reconcile(
  deps: StepDeps,
  ref: ObjectRef,
  lock: KeptStepLock,
  options: StepOptions,
): Promise<StepOutcome> {
  const { heldPod } = options;
  const read = { ...snapshotOptions(options), clusterFacts: clusterFactsOf(deps, true) };
  const snapshotReader = memoReader(deps.kube.reader);
  const snapshot = await readSnapshot(snapshotReader, ref, read);
  // A pod whose owner is gone has no reader left (its namespace being deleted, a finalizer removed by
  // hand): released now, not at the next sweep. Absent is done.
  if (heldPod !== undefined && heldPodOwnerGone(heldPod, snapshot?.uid))
    await deps.kube.writer.removePodFinalizer(ref.namespace, heldPod.name, POD_RESULT_FINALIZER);
  if (!snapshot) {
    // Gone without our finalizer's removal (removed by hand): its per-object series go now.
    await deps.metrics.objectGone(ref);
    return outcomeOf(ref, 'ObjectGone');
  }
  const writes = new ObjectWrites(deps, snapshot);
  try {
    return await planAndPerform(deps, snapshot, writes, lock, read, snapshotReader, heldPod);
  } finally {
    await outdateOwnFacts(read.clusterFacts, snapshot, writes);
  }
}

/**
 * A TerraformCluster's step that wrote the object leaves its machines' cached view of it outdated before
 * the step ends, so the members it wakes (settling runs after the step) read it live: the event of its
 * write may come later than they do (src/core/cluster-facts.ts).
 */
async function outdateOwnFacts(
  cache: ClusterFactsCache,
  snapshot: Snapshot,
  writes: ObjectWrites,
): Promise<void> {
  if (snapshot.ref.kind !== 'TerraformCluster' || snapshot.clusterName === undefined) return;
  if (writes.resourceVersion === snapshot.resourceVersion) return;
  await cache.outdate(snapshot.ref.namespace, snapshot.clusterName, {
    uid: snapshot.uid,
    resourceVersion: writes.resourceVersion,
  });
}

/** The rounds of one step: plan, perform, and plan again after a refusal or a name taken. */
async function planAndPerform(
  deps: StepDeps,
  snapshot: Snapshot,
  writes: ObjectWrites,
  lock: KeptStepLock,
  read: SnapshotOptions,
  snapshotReader: KubeReader,
  heldPod: HeldPod | undefined,
): Promise<StepOutcome> {
  const { ref } = snapshot;
  let facts = factsOf(deps, snapshot, heldPod);
  let refusals = 0;
  let moveOnly = false;
  // Each round past the first follows a refusal (at most MAX_PLANS - 1) or a name taken (at most
  // MAX_SKIPPED_JOB_NAMES: past them the start waits instead of answering `name-taken`).
  for (let round = 0; round < MAX_PLANS + MAX_SKIPPED_JOB_NAMES; round += 1) {
    const planned = await planWithReads(planReadsOf(deps, read, snapshotReader), facts);
    if ('outcome' in planned) return planned.outcome;
    // The snapshot as planned: with its Jobs when the planner asked for them.
    const performance = { deps, snap: planned.facts.snap, plan: planned.plan, writes, lock };
    let performed: Performed;
    try {
      performed = await perform(performance, moveOnly);
    } catch (error) {
      if (!isRefusal(error)) throw error;
      return observed(await recordRefusal(performance, error.message, error.causes), snapshot, writes);
    }
    if (performed.kind === 'name-taken') {
      // Section 5 step 8: another's finished Job never goes on its own; the next attempt's name is free.
      facts = { ...planned.facts, takenJobNames: [...(planned.facts.takenJobNames ?? []), performed.job] };
      moveOnly = true;
      continue;
    }
    if (performed.kind === 'done') {
      if (gotThrough(performed.outcome) && stillOurs(planned.plan, performed.outcome))
        await clearRefusal(writes);
      if (stillOurs(planned.plan, performed.outcome))
        await deps.metrics.objectSeen(objectFiguresOf(planned.facts.snap, writes.current));
      else await deps.metrics.objectGone(snapshot.ref);
      return observed(performed.outcome, snapshot, writes);
    }
    // Section 7: a recording the API server refuses for good is recorded without the refused fields.
    refusals += 1;
    if (refusals >= MAX_PLANS)
      return observed(
        await recordRefusal(performance, `${performed.message} (refused twice, without the outputs too)`),
        snapshot,
        writes,
      );
    facts = { ...facts, refusedOutputs: snapshotRedactor(planned.facts.snap).redact(performed.message) };
  }
  throw new Error(`step of ${ref.name}: more rounds than refusals and taken names allow`);
}

/**
 * A write refused for good (issue 23 item 9): not an outage (retried as `unavailable`) and not a Conflict
 * (read again at once): a policy, a quota, RBAC, a terminating namespace, a schema.
 */
function isRefusal(error: unknown): error is KubeError {
  return isKubeError(error) && !error.outage && error.code !== 'Conflict';
}

/**
 * Ends a step whose write was refused as one shape (src/core/write-refusal.ts): the `WriteRefused`
 * condition and wait on the object's status, as the step left it, naming the refused write and the API
 * server's answer (redacted), and a Warning Event, the one trace when the status write itself is refused.
 * Retried every 60 s, or at the safety interval in a namespace being deleted (`causes`, the refusal's
 * Status cause types); the first step that gets through removes it.
 */
async function recordRefusal(
  performance: Performance,
  refused: string,
  causes: readonly string[] = [],
): Promise<StepOutcome> {
  const { deps, snap, writes } = performance;
  const refusal = refusalOf(`refused: ${refused}`, causes);
  const wait = refusal.wait;
  const message = snapshotRedactor(snap).redact(refusal.message);
  const at = { now: new Date(deps.clock.nowMs()), generation: snap.generation };
  try {
    if ((await writes.status(refusedStatus(writes.current, message, at, wait), true)) === 'conflict')
      return conflict(performance);
  } catch (error) {
    if (!isRefusal(error)) throw error;
  }
  // An Event is a create too: in a namespace being deleted it would be refused like the write it reports.
  if (wait === 'WriteRefused') await emitEvents(performance, [refusalEvent(message)]);
  return outcomeOf(snap.ref, wait, { message });
}

/** Whether a step got through: a refusal it finds recorded is over. */
function gotThrough(outcome: StepOutcome): boolean {
  return outcome.action !== 'unavailable' && outcome.action !== 'deferred' && outcome.reason !== 'Conflict';
}

/**
 * Removes a refusal the status still records when the step wrote no status of its own; a refusal of this
 * very write leaves it for the next step (what the step did is done).
 */
async function clearRefusal(writes: ObjectWrites): Promise<void> {
  if (!recordsRefusal(writes.current)) return;
  try {
    await writes.status(withoutRefusal(writes.current));
  } catch (error) {
    if (!isRefusal(error)) throw error;
  }
}

/**
 * The object stays in our care after this step, so its figures are worth recording; once our finalizer went,
 * or when someone else manages it, its per-object series go instead.
 */
function stillOurs(plan: StepPlan, outcome: StepOutcome): boolean {
  return (
    !(plan.move.kind === 'finalizers' && plan.move.gone) &&
    outcome.action !== 'finalized' &&
    outcome.reason !== 'ExternallyManaged' &&
    outcome.reason !== 'DeletingWithoutFinalizer'
  );
}

/**
 * The outcome with the object's version as the step left it, so the event of this very version (the
 * step's own write) needs no step of its own (src/settle); unless the reason's row says that event starts
 * the next step (src/core/step-outcome.ts `Echo`: the finalizer write, a conflict, an outage).
 */
function observed(outcome: StepOutcome, snapshot: Snapshot, writes: ObjectWrites): StepOutcome {
  if (echoStartsNextStep(outcome.reason)) return outcome;
  return { ...outcome, observed: { uid: snapshot.uid, resourceVersion: writes.resourceVersion } };
}

/** A dry run: the same reads and plan, no lock and no write. */
function explain(deps: StepDeps, ref: ObjectRef, options: StepOptions): Promise<StepOutcome> {
  const read = { ...snapshotOptions(options), clusterFacts: clusterFactsOf(deps, false) };
  const snapshotReader = memoReader(deps.kube.reader);
  return explainStep(
    // Its snapshot read through the memo as the step's own, so its re-read for live facts reads the same.
    {
      reads: { ...planReadsOf(deps, read, snapshotReader), reader: snapshotReader },
      clock: deps.clock,
      config: deps.config,
    },
    ref,
    options.heldPod,
    read,
  );
}

/**
 * The dry run over its reads alone (no writer, no step lock): reads the object as the step does, plans it
 * with the same pure planner (src/core/planner.ts) and describes the plan (src/core/describe-plan.ts).
 * Answers `ObjectGone` when the object does not exist; API failures throw (the step's `guarded` maps them).
 */
export async function explainStep(
  deps: { reads: PlanReads; clock: StepDeps['clock']; config: StepDeps['config'] },
  ref: ObjectRef,
  heldPod?: HeldPod,
  read: SnapshotOptions = {},
): Promise<StepOutcome> {
  const snapshot = await readSnapshot(deps.reads.reader, ref, read);
  if (!snapshot) return outcomeOf(ref, 'ObjectGone');
  const planned = await planWithReads(deps.reads, factsOf(deps, snapshot, heldPod));
  return 'outcome' in planned ? planned.outcome : describePlan(planned.plan, planned.facts.snap);
}
