import { isKubeError, type KubeError } from '../adapters/kube/errors.ts';
import { BLOCK_MOVE_ANNOTATION, type BlockMoveChange, carriesBlockMove } from '../core/block-move.ts';
import { SOURCE_CONTAINER } from '../core/classify.ts';
import type { EventObjectRef, RunEvent } from '../core/event-spec.ts';
import { ownerLabels, POD_RESULT_FINALIZER, runClusterOf } from '../core/job-labels.ts';
import { bookkeptAnnotations } from '../core/job-record.ts';
import { mergePatchOf } from '../core/merge-patch.ts';
import { runSecretName } from '../core/names.ts';
import { observedAfterSpecWrite, withGeneration } from '../core/observed-generation.ts';
import { buildPlanManifest, planRequester } from '../core/plan-manifest.ts';
import { movesWithCluster, snapshotRedactor } from '../core/run-inputs.ts';
import { CLUSTERCTL_MOVE_LABEL, stateMoveLabelPatch, stateSecretOf } from '../core/run-secret-manifest.ts';
import { forgetsIdentityCheck } from '../core/runner-identity.ts';
import type { RunnerSetup } from '../core/runner-setup.ts';
import type { Snapshot } from '../core/snapshot.ts';
import type { StateCleanup, StateObjects } from '../core/state-cleanup.ts';
import { snapshotStateSuffix } from '../core/state-identity.ts';
import { outcomeOf, type StepOutcome, UNAVAILABLE_RETRY_SECONDS } from '../core/step-outcome.ts';
import type { Move, PlanWrite, PodRef, StepPlan } from '../core/step-plan.ts';
import { withoutRefusal } from '../core/write-refusal.ts';
import { OUR_API_VERSION } from '../schemas/kinds/registry.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { PlanChanges } from '../schemas/plan-changes.ts';
import { PLAN_CHANGES_LOG_TAIL_LINES, readPlanChangesLog } from '../schemas/plan-changes-log.ts';
import type { StepDeps } from './deps.ts';
import { healStaleLease, releaseRunGuards, renewRunGuards, runGuard } from './leases.ts';
import { createPlanKey, runConfigOf } from './run-config.ts';
import { keepPodLog } from './run-log-fallback.ts';
import { createRunSecret } from './run-secret.ts';
import { ensureCheckedRunnerIdentity } from './runner-identity.ts';
import { performStart } from './start-job.ts';
import type { KeptStepLock } from './step-lock.ts';

/**
 * Carrying out a step's plan (src/core/planner.ts) in the crash-safe order of DESIGN.md sections 5 and 7:
 * 1. TerraformPlans and spec contract fields, then the status (one write, with everything recorded), so
 *    `pendingPlanRef` never names a plan that does not exist and a failed status write means the finished
 *    Jobs are read again;
 * 2. Events (best effort; deterministic names, so a repeat after a crash adds none);
 * 3. per finished Job, its per-run Secret's delete and then its `captf.io/bookkept` mark (Events come first
 *    so a crash between the two repeats them rather than losing them; the Secret before the mark, so a
 *    bookkept Job has no Secret left and nothing has to look for one), then the Redis guards and the Job
 *    slots, pruning and the pods' result finalizers: everything after the marks is also done by later steps
 *    and the sweep;
 * 4. the move: watch (renew, adopt, show), delete a Job, replace the finalizers, or start a Job
 *    (guards → Job → per-run Secret → status → Events, src/step/start-job.ts; a name another's finished
 *    Job holds comes back as `name-taken`, and the step plans again past it).
 * A failpoint follows every mutation (src/step/failpoints.ts). A write the API server refuses for good
 * (400/422) while recording finished Jobs comes back as `refused`: the step plans again without the
 * contract fields (section 7: a rejected write never freezes an object). Any other refusal is thrown as the
 * KubeError it is, and the step records it as one shape (src/core/write-refusal.ts, src/step/step.ts).
 */

/** What carrying out a plan came to. */
export type Performed =
  | { kind: 'done'; outcome: StepOutcome }
  /** The recording of finished Jobs was refused for good; plan again with `refusedOutputs`. */
  | { kind: 'refused'; message: string }
  /** Another's finished Job holds the start's name; plan again with it in `takenJobNames`. */
  | { kind: 'name-taken'; job: string };

/**
 * The step's writes of its own object, under the resourceVersion it holds: each write moves it on, so the
 * next write starts from it; a concurrent writer turns a write into a Conflict instead of being overwritten.
 * Each version written is marked as the step's own (DESIGN.md section 8): its Resource-mode event, which
 * often comes back while the step still runs, then starts nothing, where it found the step lock held, was
 * deferred and came back 2 s later as a step that read the object for nothing. Only that very event is
 * dropped: a retried event, the sweep and a reference-mode event treat the version as news, so a step that
 * dies after a write is taken up as before. Nothing is marked once the step has written the finalizers: the
 * event of that write is what starts the next step (src/core/step-outcome.ts `Echo`). A spec write (the
 * contract fields) moves the generation past the one the step planned from; the status written after it
 * records the new one (src/core/observed-generation.ts), so its echo is news to no one either.
 */
export class ObjectWrites {
  #resourceVersion: string;
  #status: TargetStatus;
  #blockMove: boolean;
  #generation: number;
  #wroteBoundary = false;
  readonly #deps: StepDeps;
  readonly #snap: Snapshot;

  constructor(deps: StepDeps, snap: Snapshot) {
    this.#deps = deps;
    this.#snap = snap;
    this.#resourceVersion = snap.resourceVersion;
    this.#generation = snap.generation;
    this.#status = snap.status;
    this.#blockMove = carriesBlockMove(snap.meta.annotations);
  }

  /** Whether the object carries `clusterctl.cluster.x-k8s.io/block-move` after the step's own writes so far. */
  get carriesBlockMove(): boolean {
    return this.#blockMove;
  }

  /** The object's version after the step's own writes so far. */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** The object's status after the step's own writes so far. */
  get current(): TargetStatus {
    return this.#status;
  }

  #target() {
    const { ref } = this.#snap;
    return { namespace: ref.namespace, name: ref.name, resourceVersion: this.#resourceVersion };
  }

  /**
   * Moves on to the version a write left and marks it as the step's own, unless this step wrote the
   * finalizers (this write or an earlier one): from then on its writes' events start the next step.
   */
  async #wrote(resourceVersion: string, boundary = false): Promise<void> {
    this.#resourceVersion = resourceVersion;
    if (boundary) this.#wroteBoundary = true;
    if (this.#wroteBoundary) return;
    // Best effort: unmarked, the event costs the step it cost before; Redis not answering is `unknown`.
    await this.#deps.redis.markOwnWrite?.({ uid: this.#snap.uid, resourceVersion });
  }

  /**
   * Merge-patches the status to `next` when it differs; throws a KubeError for anything but Conflict. A
   * refusal recorded earlier goes with the write (src/core/write-refusal.ts), unless `refusal` records one.
   */
  async status(next: TargetStatus, refusal = false): Promise<'written' | 'unchanged' | 'conflict'> {
    if (!refusal) next = withoutRefusal(next);
    next = observedAfterSpecWrite(next, this.#snap.generation, this.#generation);
    const patch = mergePatchOf(this.#status as Record<string, unknown>, next as Record<string, unknown>);
    if (patch === undefined) return 'unchanged';
    try {
      const object = await this.#deps.kube.writer.patchStatus(this.#snap.ref.kind, this.#target(), patch);
      this.#status = next;
      await this.#wrote(object.metadata.resourceVersion);
      return 'written';
    } catch (error) {
      if (isKubeError(error, 'Conflict')) return 'conflict';
      throw error;
    }
  }

  /**
   * Merge-patches the spec contract fields. The generation it leaves is what the step's later status writes
   * record as observed; an answer without one is a boundary, as the finalizer write is.
   */
  async spec(spec: Record<string, unknown>): Promise<void> {
    const object = await this.#deps.kube.writer.patchSpec(this.#snap.ref.kind, this.#target(), spec);
    const { generation } = object.metadata;
    if (generation !== undefined) this.#generation = generation;
    await this.#wrote(object.metadata.resourceVersion, generation === undefined);
  }

  /**
   * Merge-patches annotations (`null` removes one), and replaces the finalizers when given: one write. Throws
   * a KubeError (Conflict included) when it fails.
   */
  async metadata(patch: {
    annotations?: Record<string, string | null>;
    finalizers?: string[];
  }): Promise<void> {
    const object = await this.#deps.kube.writer.patchCustomMetadata(
      this.#snap.ref.kind,
      this.#target(),
      patch,
    );
    if (patch.annotations !== undefined && BLOCK_MOVE_ANNOTATION in patch.annotations)
      this.#blockMove = patch.annotations[BLOCK_MOVE_ANNOTATION] !== null;
    await this.#wrote(object.metadata.resourceVersion, patch.finalizers !== undefined);
  }

  /** Replaces the finalizers; the block-move annotation goes in the same write when the plan removes it. */
  async finalizers(finalizers: string[], removeBlockMove = false): Promise<void> {
    await this.metadata({
      finalizers,
      ...(removeBlockMove ? { annotations: { [BLOCK_MOVE_ANNOTATION]: null } } : {}),
    });
  }

  /**
   * Writes the plan's block-move change (src/core/block-move.ts) unless the object already says so after
   * this step's writes; answers `conflict` when the object changed meanwhile (read it again).
   */
  async blockMove(change: BlockMoveChange): Promise<'written' | 'unchanged' | 'conflict'> {
    if (change === undefined || (change === 'add') === this.#blockMove) return 'unchanged';
    try {
      await this.metadata({ annotations: { [BLOCK_MOVE_ANNOTATION]: change === 'add' ? '' : null } });
      return 'written';
    } catch (error) {
      if (isKubeError(error, 'Conflict')) return 'conflict';
      throw error;
    }
  }
}

/** True for a recording the API server refused for its content: it will refuse it again (section 7). */
function refusedForGood(error: unknown): error is KubeError {
  return isKubeError(error, 'Invalid', 'BadRequest');
}

/** The object as Events name it (`regarding`). */
function regardingOf(snap: Snapshot): EventObjectRef {
  return {
    apiVersion: OUR_API_VERSION,
    kind: snap.ref.kind,
    namespace: snap.ref.namespace,
    name: snap.ref.name,
    uid: snap.uid,
  };
}

/** What one perform works with. */
export interface Performance {
  deps: StepDeps;
  snap: Snapshot;
  plan: StepPlan;
  writes: ObjectWrites;
  lock: KeptStepLock;
}

/**
 * Emits Events about the object, each once, best effort (DESIGN.md section 7): an Event the API server
 * refuses (a policy, a terminating namespace) is dropped; only an outage stops the step.
 */
export async function emitEvents(
  performance: Performance,
  events: readonly RunEvent[],
  related?: EventObjectRef,
) {
  const { deps, snap } = performance;
  const created: string[] = [];
  for (const event of events) {
    try {
      const answer = await deps.kube.writer.emitEvent({
        ...event,
        regarding: regardingOf(snap),
        ...(related ? { related } : {}),
      });
      if (answer === 'created') created.push(event.reason);
    } catch (error) {
      if (!isKubeError(error) || error.outage) throw error;
    }
    deps.failpoints.hit('after-event');
  }
  return created;
}

/**
 * The readable plan the runner printed last in the `source` container's log (src/schemas/plan-changes-log.ts),
 * read while the pod is still held by its result finalizer. The log goes through the pod's kubelet, which
 * may be gone for good (a node lost with the pod still on it): waiting for it would hold the object's
 * bookkeeping hostage, so a failed read is tried once more and then the plan is made without `changes`
 * (its digest and counts still bind it; a real API outage fails the plan's own create right after). A
 * log without the lines (a runner of an earlier release, a log rotated away) also leaves `changes` out.
 */
async function readableChanges(
  performance: Performance,
  pod: string | undefined,
): Promise<PlanChanges | undefined> {
  if (pod === undefined) return undefined;
  const { deps, snap } = performance;
  for (let tries = 0; tries < 2; tries += 1) {
    try {
      const log = await deps.kube.reader.readPodLog(
        snap.ref.namespace,
        pod,
        SOURCE_CONTAINER,
        PLAN_CHANGES_LOG_TAIL_LINES,
      );
      const read = readPlanChangesLog(log ?? '');
      return read.ok ? read.changes : undefined;
    } catch (error) {
      if (!isKubeError(error) || !error.outage) return undefined;
    }
  }
  return undefined;
}

async function writePlan(performance: Performance, change: PlanWrite): Promise<void> {
  const { deps, snap } = performance;
  if (change.kind === 'create') {
    const changes = await readableChanges(performance, change.pod);
    const manifest = buildPlanManifest({
      target: {
        apiVersion: OUR_API_VERSION,
        kind: snap.ref.kind,
        name: snap.ref.name,
        namespace: snap.ref.namespace,
        uid: snap.uid,
      },
      job: change.job,
      inputsHash: change.inputsHash,
      plan: change.plan,
      ...(changes ? { changes } : {}),
      requestedBy: planRequester(snap.managedFields, change.generation),
      labels: ownerLabels({
        kind: snap.ref.kind,
        name: snap.ref.name,
        uid: snap.uid,
        clusterName: snap.clusterName,
      }),
    });
    try {
      await deps.kube.writer.createCustomObject('TerraformPlan', {
        ...manifest,
        metadata: {
          ...manifest.metadata,
          ownerReferences: manifest.metadata.ownerReferences.map((owner) => ({ ...owner })),
        },
      });
    } catch (error) {
      // The repeat of a crashed step.
      if (!isKubeError(error, 'AlreadyExists')) throw error;
    }
    return;
  }
  const { plan } = change;
  if (plan.status?.phase === change.phase) return;
  try {
    await deps.kube.writer.patchStatus(
      'TerraformPlan',
      {
        namespace: snap.ref.namespace,
        name: plan.metadata.name,
        resourceVersion: plan.metadata.resourceVersion ?? '',
      },
      {
        phase: change.phase,
        appliedBy: change.phase === 'Applied' ? change.job : null,
        message: change.message,
      },
    );
  } catch (error) {
    // Gone or changed meanwhile (a person approved it this instant): the next step reads it again.
    if (!isKubeError(error, 'NotFound', 'Conflict')) throw error;
  }
}

/** Marks one Job bookkept; a Job changed meanwhile is read again once, a Job gone needs no mark. */
async function markBookkept(performance: Performance, run: StepPlan['bookkept'][number]): Promise<void> {
  const { writer, reader } = performance.deps.kube;
  const namespace = performance.snap.ref.namespace;
  const annotations = bookkeptAnnotations(run.classification.evidence, run.classification.finishedAt);
  let resourceVersion = run.job.metadata.resourceVersion ?? '';
  for (let tries = 0; tries < 2; tries += 1) {
    try {
      await writer.patchJobMetadata({ namespace, name: run.record.name, resourceVersion }, { annotations });
      return;
    } catch (error) {
      if (isKubeError(error, 'NotFound')) return;
      if (!isKubeError(error, 'Conflict') || tries > 0) throw error;
      const fresh = await reader.getJob(namespace, run.record.name);
      if (!fresh) return;
      resourceVersion = fresh.metadata?.resourceVersion ?? '';
    }
  }
}

/**
 * What the newest successful apply or refresh among the bookkept runs reported of the object's state
 * Secret (the result's `state`, seen by the runner's loopback proxy; src/schemas/result.ts): its size
 * (`captf_state_bytes`: the API server refuses a Secret over 1 MiB, and the state then no longer saves) and
 * the `clusterctl move` label of an object Cluster API owns, when the report says the Secret lacks it
 * (src/core/run-secret-manifest.ts: made before Cluster API set the owner). No read: a merge patch of labels
 * needs none, so it costs one write once per Secret and nothing after. A run that reported nothing (a
 * backend the runner reaches directly, a runner of an earlier release) gives no figure and no label. Best
 * effort: a Secret gone meanwhile (NotFound) is left alone; a refusal costs the label, never the step.
 */
async function reportState(performance: Performance): Promise<void> {
  const { deps, snap, plan } = performance;
  const state = plan.bookkept
    .filter((run) => run.classification.success && run.record.op !== 'destroy')
    .map((run) => run.classification.runnerResult?.state)
    .findLast((report) => report !== undefined);
  if (state === undefined) return;
  await deps.metrics.sizeMeasured({ ...snap.ref, what: 'state', bytes: state.bytes });
  const labels = stateMoveLabelPatch(
    state.moveLabel ? { [CLUSTERCTL_MOVE_LABEL]: '' } : {},
    movesWithCluster(snap),
  );
  const where = stateSecretOf({
    backend: snap.spec?.backend,
    namespace: snap.ref.namespace,
    stateSuffix: snapshotStateSuffix(snap),
  });
  if (labels === undefined || where === undefined) return;
  await deps.kube.writer.patchSecretLabels(where, labels).catch((error: unknown) => {
    if (!isKubeError(error) || error.outage) throw error;
  });
  deps.failpoints.hit('after-state-label');
}

/**
 * Before our finalizer goes (issue 23 item 3): the state Secret and its lock Lease, which nobody owns, are
 * deleted when the planner found the state holds nothing, else kept with a Warning Event. A step that dies
 * in between redoes it on the next step (the finalizer is still there); a delete of what is gone is done.
 */
async function cleanUpState(
  performance: Performance,
  state: StateObjects & { cleanup: StateCleanup },
): Promise<void> {
  const { deps } = performance;
  if (state.cleanup.kind === 'keep') {
    await emitEvents(performance, [state.cleanup.event]);
    return;
  }
  // The Secret last: it is the evidence a step that died in between reads again.
  await deps.kube.writer.deleteLease(state.namespace, state.lockLease);
  await deps.kube.writer.deleteSecret(state.namespace, state.stateSecret);
}

/** The outcome of a status write that lost a Conflict: read again at once. */
export function conflict(performance: Performance, job?: string): StepOutcome {
  return outcomeOf(performance.snap.ref, 'Conflict', {
    message: 'the object changed meanwhile; read it again',
    ...(job !== undefined ? { job } : {}),
  });
}

export function unavailable(performance: Performance, message: string): StepOutcome {
  return outcomeOf(performance.snap.ref, 'Unavailable', {
    requeueAfterSeconds: UNAVAILABLE_RETRY_SECONDS,
    message,
  });
}

/**
 * Step 1 to 3 of the write order. Answers an outcome when the step must end early (a Conflict), `refused`
 * when the recording was refused for good, undefined when the move may go on.
 */
async function performWrites(performance: Performance): Promise<Performed | undefined> {
  const { deps, snap, plan, writes } = performance;
  // Before anything of the bookkeeping, so a step that dies later has forgotten already: a run that did not
  // succeed may have met an identity someone took apart, which the next start then reads and puts back
  // (DESIGN.md section 15). Redis not answering leaves the check remembered: the next such run forgets it.
  if (forgetsIdentityCheck(plan.bookkept.map((run) => run.classification)))
    await deps.redis.identityChecks.forget(snap.uid);
  // Before the status that forgets the lost Job: a step that dies in between finds it lost again.
  for (const name of plan.lostRunSecrets) await deps.kube.writer.deleteSecret(snap.ref.namespace, name);
  for (const change of plan.plans) {
    await writePlan(performance, change);
    deps.failpoints.hit('after-plan-write');
  }
  const recording = plan.bookkept.length > 0;
  try {
    if (plan.spec !== undefined) {
      await writes.spec(plan.spec);
      deps.failpoints.hit('after-contract-spec-patch');
    }
    // After a spec write the status is written even when the plan changes nothing else: it records the
    // generation that write left (ObjectWrites.status), and the write's echo starts no step to do it.
    const status =
      plan.status ?? (plan.spec !== undefined ? withGeneration(writes.current, snap.generation) : undefined);
    if (status !== undefined && (await writes.status(status)) === 'conflict')
      return { kind: 'done', outcome: conflict(performance) };
  } catch (error) {
    // A recording refused for its fields is made again without them (section 7); any other refusal ends
    // the step as a refused write (src/core/write-refusal.ts, src/step/step.ts).
    if (recording && refusedForGood(error)) return { kind: 'refused', message: error.message };
    throw error;
  }
  if (recording) deps.failpoints.hit('after-bookkeep-status');
  await emitEvents(performance, plan.events);
  for (const run of plan.bookkept) {
    // The Secret before the mark (DESIGN.md section 7's order): a bookkept Job has no per-run Secret left, so
    // nothing has to look for one later. A step that dies between the two bookkeeps the Job again, and
    // deleting a Secret that is gone already is a no-op.
    await deps.kube.writer.deleteSecret(snap.ref.namespace, runSecretName(run.record.name));
    deps.failpoints.hit('after-run-secret-delete');
    if (run.podLog) await keepPodLog(deps, run.podLog, snapshotRedactor(snap));
    await markBookkept(performance, run);
    // After the mark: a step that crashed before it bookkeeps the Job again, and only then counts it.
    await deps.metrics.jobBookkept({
      object: snap.ref,
      job: run.record.name,
      classification: run.classification,
      durationSeconds: run.durationSeconds,
    });
    deps.failpoints.hit('after-bookkept-mark');
  }
  await reportState(performance);
  for (const run of plan.bookkept) {
    // Where the run took them: the object may have joined a Cluster API cluster since (job-labels.ts).
    const guard = runGuard(snap.ref, runClusterOf(run.job), {
      op: run.record.op,
      job: run.record.name,
      activeDeadlineSeconds: run.job.spec?.activeDeadlineSeconds ?? 0,
    });
    // An unanswered release is healed later: a lease held under a finished Job's name is stale (leases.ts).
    await releaseRunGuards(deps.redis, guard, run.record.name);
    deps.failpoints.hit('after-lease-release');
  }
  for (const job of plan.prune) {
    // The log first: once the Job is gone nothing selects it again, and its log would stay with the object.
    await deps.kube.writer.deleteSecret(snap.ref.namespace, job.runLog);
    await deps.kube.writer.deleteJob(snap.ref.namespace, job.name, job.uid ? { uid: job.uid } : {});
    deps.failpoints.hit('after-prune-delete');
  }
  // The deletes first: they go under the version read, which a release would move on.
  await deleteOrphanedPods(performance, plan.deletePods);
  await releasePods(performance, plan.releasePods);
  return undefined;
}

/**
 * Deletes the orphaned pods the plan names (src/core/orphaned-pods.ts), best effort: nothing of the object
 * waits on them, so a refusal (a pod changed since it was read, an older ClusterRole without `delete` on
 * pods, a site's own policy) never holds its step; the next read judges them again, and the sweep logs
 * what it cannot delete. Only an outage ends the step.
 */
async function deleteOrphanedPods(performance: Performance, pods: readonly PodRef[]): Promise<void> {
  const { deps, snap } = performance;
  for (const pod of pods) {
    try {
      await deps.kube.writer.deletePod(snap.ref.namespace, pod.name, {
        uid: pod.uid,
        resourceVersion: pod.resourceVersion,
      });
    } catch (error) {
      if (!isKubeError(error) || error.outage) throw error;
    }
  }
}

async function releasePods(performance: Performance, pods: readonly string[]): Promise<void> {
  for (const pod of pods)
    await performance.deps.kube.writer.removePodFinalizer(
      performance.snap.ref.namespace,
      pod,
      POD_RESULT_FINALIZER,
    );
}

/**
 * Carries out `plan`; throws a KubeError on an API outage (the step answers `unavailable`). `moveOnly`
 * carries out the move alone: the plan made again after a `name-taken` start differs from the one before
 * it only in that start, whose writes (recorded runs, their marks and metrics) are made already.
 */
export async function perform(performance: Performance, moveOnly = false): Promise<Performed> {
  if (!moveOnly) {
    const early = await performWrites(performance);
    if (early) return early;
  }
  const { move } = performance.plan;
  if (move.kind === 'start') return performStart(performance, move.start);
  return { kind: 'done', outcome: await performMove(performance, move) };
}

/**
 * Nothing of the object runs any more: the block-move annotation goes (after every mark, so a step that
 * dies before it leaves the annotation to the next step, never a bookkept run unread). A Conflict leaves it
 * to the next step, which reads the object again.
 */
async function releaseBlockMove(performance: Performance): Promise<StepOutcome> {
  const { deps, plan, writes } = performance;
  const released = await writes.blockMove(plan.blockMove);
  if (released === 'conflict') return conflict(performance);
  if (released === 'written') deps.failpoints.hit('after-block-move');
  return plan.outcome;
}

/**
 * The first step's head start on the first Job (src/core/runner-setup.ts): the plan key, then the runner
 * identity, after the finalizer so an object deleted meanwhile finds its state objects cleaned up by its
 * finalize step. The identity is created without a look for it first (the object is new to us; one there
 * already is kept or replaced: src/step/runner-identity.ts `assumeAbsent`). Nothing relies on it: the Job
 * step makes sure of both again (one read each when in place, none for a remembered identity check), so a
 * refusal here is left to the Job step, which records it (src/core/write-refusal.ts) with nothing of a run
 * taken yet. An outage still ends the step as one.
 */
async function setUpRunner(performance: Performance, setup: RunnerSetup): Promise<void> {
  const { deps, snap } = performance;
  try {
    await createPlanKey(deps.kube.writer, { ref: snap.ref, uid: snap.uid }, setup.stateSuffix);
    if (setup.identity) {
      await ensureCheckedRunnerIdentity(
        { kube: deps.kube, checks: deps.redis.identityChecks },
        snap.uid,
        setup.identity,
        { assumeAbsent: true },
      );
      deps.failpoints.hit('after-runner-identity');
    }
  } catch (error) {
    if (!isKubeError(error) || error.outage) throw error;
  }
}

async function performMove(
  performance: Performance,
  move: Exclude<Move, { kind: 'start' }>,
): Promise<StepOutcome> {
  const { deps, snap, plan, writes } = performance;
  switch (move.kind) {
    case 'none':
      return plan.outcome;
    case 'rest': {
      if (move.healLease && (await healStaleLease(deps.redis, snap.ref, snap.clusterName, snap.records)))
        deps.failpoints.hit('after-lease-release');
      return releaseBlockMove(performance);
    }
    case 'finalizers': {
      // The object goes: its remembered identity check with it (its uid never comes back; the TTL is the
      // backstop when Redis does not answer).
      if (move.gone) await deps.redis.identityChecks.forget(snap.uid);
      if (move.state) await cleanUpState(performance, move.state);
      await writes.finalizers(move.finalizers, plan.blockMove === 'remove');
      deps.failpoints.hit('after-finalizer-patch');
      if (move.setup) await setUpRunner(performance, move.setup);
      return plan.outcome;
    }
    case 'delete-job': {
      await deps.kube.writer.deleteJob(snap.ref.namespace, move.job.name, { uid: move.job.uid });
      deps.failpoints.hit(move.release ? 'after-stuck-delete' : 'after-deadline-delete');
      if (move.release) {
        const released = await releaseRunGuards(
          deps.redis,
          runGuard(snap.ref, move.release.clusterName, move.release),
          move.job.name,
        );
        if (released !== 'released') return unavailable(performance, 'the Redis release did not answer');
      }
      await releasePods(performance, move.releasePods);
      return releaseBlockMove(performance);
    }
    case 'watch': {
      const guard = runGuard(snap.ref, move.guard.clusterName, move.guard);
      const renewed = await renewRunGuards(deps.redis, guard, move.job.name);
      if (renewed !== 'renewed' && renewed !== 'held-by-other')
        return unavailable(performance, 'the Redis lease renewal did not answer');
      deps.failpoints.hit('after-lease-renew');
      // A Job that runs without the annotation (started by a release before it, or a person removed it).
      const marked = await writes.blockMove(plan.blockMove);
      if (marked === 'conflict') return conflict(performance, move.job.name);
      if (marked === 'written') deps.failpoints.hit('after-block-move');
      if (move.adopt) {
        const job = await deps.kube.reader.getJob(snap.ref.namespace, move.job.name);
        if (job) {
          const config = await runConfigOf(deps.kube, { ref: snap.ref, uid: snap.uid }, move.adopt);
          const bytes = await createRunSecret(deps.kube, snap.ref.namespace, job, config);
          deps.failpoints.hit('after-run-secret-create');
          await deps.metrics.sizeMeasured({ ...snap.ref, what: 'inputs', bytes });
        }
      }
      if (move.status !== undefined) {
        const written = await writes.status(move.status);
        if (written === 'conflict') return conflict(performance, move.job.name);
        if (written === 'written') deps.failpoints.hit('after-active-status');
      }
      return plan.outcome;
    }
  }
}
