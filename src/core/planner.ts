import { API_VERSION } from '../schemas/kinds/api-group.ts';
import {
  type EffectiveJobsPolicy,
  jobsPolicyProblems,
  resolveJobsPolicy,
} from '../schemas/kinds/jobs-policy.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { Op } from '../schemas/result.ts';
import type { PlanSituation } from './approval.ts';
import { nextAttemptOf, retryStatesOf, withStarted } from './attempts.ts';
import type { RetryState } from './backoff.ts';
import {
  blockMoveChange,
  blockMoveWanted,
  carriesBlockMove,
  DELETE_FOR_MOVE_ANNOTATION,
} from './block-move.ts';
import { type Bookkeeping, jobsToBookkeep, planBookkeeping, recordLostActiveJob } from './bookkeeping.ts';
import { capiWait } from './cluster-api.ts';
import { findCondition, OP_CONDITION, setCondition, withPausedCondition } from './conditions.ts';
import { decideOp, type StartDecision, withoutState } from './decide.ts';
import { type RunEvent, runEvent } from './event-spec.ts';
import { applyGates, type GateInput } from './gates.ts';
import { ANNOTATIONS, runClusterOf } from './job-labels.ts';
import { buildJobManifest } from './job-manifest.ts';
import type { JobRecord } from './job-record.ts';
import { idleWithoutJobs, keptWithoutJobs } from './jobs-read.ts';
import { lockHoldingJob, staleLockToUnlock } from './lock-evidence.ts';
import { mergePatchOf } from './merge-patch.ts';
import { activeStatus, idleStatus, type StatusContext, waitStatus } from './move-status.ts';
import { freeJobName } from './names.ts';
import type { ObjectRef } from './object-ref.ts';
import { buildOutputsSecret } from './outputs-secret.ts';
import { plansAfterBookkeeping } from './plan-situation.ts';
import { podsToRelease } from './pod-release.ts';
import { isPodAlive, mayHavePods, podsOfJob } from './pods.ts';
import { FINALIZER, preamble } from './preamble.ts';
import { selectJobsToPrune } from './prune.ts';
import type { Redactor } from './redaction.ts';
import { decisionAnnotations, decisionsOf, type RunDecisions } from './run-decisions.ts';
import { type RunInputs, resolveRunInputs, snapshotRedactor } from './run-inputs.ts';
import { runLogSecretName } from './run-log.ts';
import type { RunConfigSource } from './run-secret-manifest.ts';
import { runnerAccountOf } from './runner-identity.ts';
import { runnerSetupOf } from './runner-setup.ts';
import { fullSlotScopes, type SlotScope } from './slot-shares.ts';
import type { Snapshot } from './snapshot.ts';
import { decideStateCleanup, stateObjectsOf } from './state-cleanup.ts';
import {
  ACCEPT_EMPTY_STATE_ANNOTATION,
  acceptsEmptyState,
  checkedStateSecret,
  provisionedBy,
  stateHoldsNothing,
  stateLost,
} from './state-evidence.ts';
import { jobStateSuffixes, unrecordedStateSuffix } from './state-identity.ts';
import { type OutcomeExtras, outcomeOf, type StepOutcome, type StepReason } from './step-outcome.ts';
import type {
  HeldWait,
  JobRef,
  Move,
  PlanFacts,
  Planned,
  PlannedStart,
  PlanRead,
  PlanWrite,
  RunGuardSpec,
  StepPlan,
} from './step-plan.ts';
import { type NotOptedIn, notOptedInEvent } from './variables-opt-in.ts';
import { type JobView, timestampMs } from './views.ts';
import { type WaitDecision, waitFor } from './wait-table.ts';
import { fullJobSlotSources, releaseWakes, runLeasesSource, secretSource } from './wake.ts';
import { shownPullTrouble, watchActiveJob } from './watch.ts';

/**
 * The planner of one reconcile step (DESIGN.md sections 3 to 7): one pure function from the snapshot and the
 * clock to the whole plan of the step: which finished Jobs to record and how each is classified, the
 * TerraformPlans to create or supersede, the spec contract fields, the one next status, the Events, the
 * Jobs to prune and the pods to release, the move (watch, start, wait, finalize) and the outcome.
 * src/step/perform.ts carries it out in the crash-safe write order; a dry run describes it
 * (src/core/describe-plan.ts). Nothing here reads the clock, the environment or the network.
 *
 * The planner runs in phases: the pods, the Job slot usage and a watched Job's per-run Secret are read only
 * when the plan needs them. Called without one it needs, it answers `{ kind: 'read', read }`; the shell
 * reads it and calls again with the fact added. A no-op step therefore costs its two reads and nothing more.
 */

/** Shared by the phases of one plan. */
interface Planning {
  facts: PlanFacts;
  snap: Snapshot;
  redactor: Redactor;
  policy: EffectiveJobsPolicy;
  statusContext: StatusContext;
}

function jobRef(job: JobView): JobRef {
  return {
    name: job.metadata.name,
    uid: job.metadata.uid ?? '',
    resourceVersion: job.metadata.resourceVersion ?? '',
  };
}

function guardOf(op: Op, job: string, activeDeadlineSeconds: number, clusterName?: string): RunGuardSpec {
  return { op, job, activeDeadlineSeconds, ...(clusterName !== undefined ? { clusterName } : {}) };
}

/** The status to write: `next` with the generation, or undefined when it equals the status read. */
function changed(current: TargetStatus, next: TargetStatus): TargetStatus | undefined {
  return mergePatchOf(current as Record<string, unknown>, next as Record<string, unknown>) === undefined
    ? undefined
    : next;
}

function withGeneration(status: TargetStatus | undefined, generation: number): TargetStatus | undefined {
  return status === undefined ? undefined : { ...status, observedGeneration: generation };
}

function outcome(planning: Planning, reason: StepReason, extras: OutcomeExtras = {}): StepOutcome {
  const { message, ...rest } = extras;
  return outcomeOf(planning.snap.ref, reason, {
    ...rest,
    ...(message !== undefined ? { message: planning.redactor.redact(message) } : {}),
  });
}

/** A plan with no writes and no move. */
function bare(move: Move, result: StepOutcome): StepPlan {
  return {
    kind: 'plan',
    bookkept: [],
    plans: [],
    spec: undefined,
    status: undefined,
    events: [],
    prune: [],
    releasePods: [],
    move,
    outcome: result,
  };
}

/**
 * Plans one step. Answers `read` when a fact it needs is missing (pods, slot usage, a watched Job's
 * per-run Secret); never throws for any snapshot.
 */
export function planStep(facts: PlanFacts): Planned {
  const planned = planMoveAndWrites(facts);
  if (planned.kind === 'read') return planned;
  // Cluster API's move contract (src/core/block-move.ts): the annotation follows the move, written only when
  // the object read does not already carry what the move wants.
  const change = blockMoveChange(
    carriesBlockMove(facts.snap.meta.annotations),
    blockMoveWanted(planned.move),
  );
  return change === undefined ? planned : { ...planned, blockMove: change };
}

function planMoveAndWrites(facts: PlanFacts): Planned {
  const { snap } = facts;
  const redactor = snapshotRedactor(snap);
  const policy = resolveJobsPolicy(snap.spec?.jobs, snap.owningCluster?.defaultsJobs);
  const planning: Planning = {
    facts,
    snap,
    redactor,
    policy,
    statusContext: {
      now: facts.now,
      generation: snap.generation,
      deleting: snap.meta.deletionTimestamp !== undefined,
      redactor,
    },
  };

  const pre = preamble(snap.meta);
  if (pre.kind === 'leave-alone')
    return bare({ kind: 'none' }, outcome(planning, pre.reason, { message: pre.message }));
  if (pre.kind === 'not-ours') return bare({ kind: 'none' }, outcome(planning, pre.reason));
  if (pre.kind === 'add-finalizer') {
    const setup = runnerSetupOf(snap, policy, facts.config.stateEncryption);
    return bare(
      { kind: 'finalizers', finalizers: pre.finalizers, gone: false, ...(setup ? { setup } : {}) },
      outcome(planning, pre.reason),
    );
  }

  if (snap.statusUnreadable) return planUnreadableStatus(planning, snap.statusUnreadable);

  const finished = jobsToBookkeep(snap);
  const active = snap.records.find((r) => !r.finished && !r.bookkept);
  // Bookkeeping reads pods; so does watching a Job (trouble starting it, its deadline, adoption).
  if ((finished.length > 0 || active !== undefined) && facts.pods === undefined)
    return { kind: 'read', read: 'pods' };
  const watched = active === undefined ? undefined : watchOf(planning, active);
  if (watched?.kind === 'read') return watched;
  const enforced = watched?.verdict.kind === 'delete' && watched.verdict.reason === 'JobDeadlineExceeded';
  const toBookkeep = enforced && active ? jobsToBookkeep(snap, new Set([active.name])) : finished;
  const bookkeeping =
    toBookkeep.length > 0
      ? planBookkeeping(
          {
            snap,
            now: facts.now,
            pods: facts.pods ?? [],
            redactor,
            status: snap.status,
            ...(enforced && active ? { deadlineEnforced: new Set([active.name]) } : {}),
            ...(facts.refusedOutputs !== undefined ? { refusedOutputs: facts.refusedOutputs } : {}),
          },
          toBookkeep,
        )
      : undefined;
  const base = baseOf(planning, bookkeeping);
  if (enforced && watched && active) {
    // The Job controller is late (section 5 step 4): the run is recorded first, then the Job deleted.
    const pods = podsOfJob(watched.job, facts.pods ?? []);
    return finish(
      base,
      base.status,
      { kind: 'delete-job', job: jobRef(watched.job), releasePods: pods.map((pod) => pod.metadata.name) },
      outcome(planning, 'JobDeadlineExceeded', {
        requeueAfterSeconds: 1,
        job: active.name,
        ...(watched.verdict.kind === 'delete' ? { message: watched.verdict.message } : {}),
      }),
      false,
    );
  }
  return decide(base, watched);
}

/** Most unreadable fields a message names; the Event note has 1 KiB. */
const UNREADABLE_PATHS_NAMED = 8;

/**
 * A status that does not parse (issue 23 item 4; DESIGN.md section 6): nothing runs. No Job is bookkept,
 * watched, started or pruned and the finalizer stays, since every one of those decisions reads fields the
 * status may have lost (`stateSuffix` names the state a Job works on). The write is a merge patch of
 * `waitReason` and the `Ready` condition over the fields that parse, so every other field, the unreadable
 * ones included, stays as recorded until a person fixes or removes what the message names.
 */
function planUnreadableStatus(planning: Planning, paths: readonly string[]): StepPlan {
  const { snap, facts } = planning;
  const named = paths.slice(0, UNREADABLE_PATHS_NAMED).join(', ');
  const more =
    paths.length > UNREADABLE_PATHS_NAMED ? ` and ${paths.length - UNREADABLE_PATHS_NAMED} more` : '';
  const message = `status fields do not parse: ${named}${more}; nothing runs until they are fixed or removed`;
  const wait = waitFor('StatusUnreadable', { now: facts.now, uid: snap.uid, message });
  const next: TargetStatus = {
    ...snap.status,
    waitReason: wait.reason,
    conditions: setCondition(
      snap.status.conditions ?? [],
      { type: 'Ready', status: 'Unknown', reason: wait.reason, message },
      { now: facts.now, generation: snap.generation },
    ),
  };
  const repeated =
    snap.status.waitReason === wait.reason &&
    findCondition(snap.status.conditions, 'Ready')?.message === message;
  const event = runEvent('StatusUnreadable', {
    action: 'Reconcile',
    note: planning.redactor.redact(message),
    transitionKey: paths.join(','),
  });
  return {
    ...bare({ kind: 'none' }, outcome(planning, wait.reason, { message })),
    status: changed(snap.status, next),
    events: repeated ? [] : [event],
  };
}

/** The watch verdict of the active Job, once its per-run Secret is known where it matters. */
type Watched =
  | { kind: 'read'; read: PlanRead }
  | {
      kind: 'verdict';
      job: JobView;
      record: JobRecord;
      verdict: ReturnType<typeof watchActiveJob>;
      runSecretExists: boolean;
    };

function watchOf(planning: Planning, record: JobRecord): Watched | undefined {
  const { snap, facts } = planning;
  const job = snap.jobs.find((j) => j.metadata.name === record.name);
  if (!job) return undefined;
  const pods = podsOfJob(job, facts.pods ?? []);
  // Reading the Secret costs a request; only a Job with no started pod can be missing it (section 5 step 4).
  const started = pods.some((pod) => pod.status?.phase !== 'Pending');
  if (!started && facts.runSecretExists === undefined) return { kind: 'read', read: 'run-secret' };
  const runSecretExists = started || facts.runSecretExists === true;
  const shown = shownPullTrouble(snap.status, record.name, record.op);
  return {
    kind: 'verdict',
    job,
    record,
    verdict: watchActiveJob({
      now: facts.now,
      job,
      pods,
      runSecretExists,
      deleting: snap.meta.deletionTimestamp !== undefined,
      op: record.op,
      ...(shown === undefined ? {} : { pullTroubleShown: shown }),
    }),
    runSecretExists,
  };
}

/** The parts of a plan decided before the move. */
interface Base {
  planning: Planning;
  bookkeeping: Bookkeeping | undefined;
  /** The status after bookkeeping (and a lost active Job, and a superseded plan reference). */
  status: TargetStatus;
  events: RunEvent[];
  planWrites: PlanWrite[];
  /** The object's records as they stand once the marks are written. */
  records: JobRecord[];
  situation: PlanSituation;
}

/** Bookkeeping, a lost active Job, and the plans as this step leaves them (C18, C19). */
function baseOf(planning: Planning, bookkeeping: Bookkeeping | undefined): Base {
  const { snap, facts } = planning;
  let status = bookkeeping?.status ?? snap.status;
  const events: RunEvent[] = [...(bookkeeping?.events ?? [])];
  const lost = recordLostActiveJob(snap, status, facts.now, planning.policy.activeDeadlineSeconds);
  if (lost) {
    status = lost.status;
    events.push(...lost.events);
  }
  const situation = plansAfterBookkeeping({
    ...(snap.pendingPlan ? { pendingPlan: snap.pendingPlan } : {}),
    uid: snap.uid,
    inputsHash: snap.inputsHash,
    changes: bookkeeping?.plans ?? [],
    status,
  });
  const planWrites: PlanWrite[] = [...(bookkeeping?.plans ?? [])];
  const pending = snap.pendingPlan;
  if (pending && situation.supersede.includes(pending.metadata.name)) {
    planWrites.push({
      kind: 'phase',
      plan: pending,
      phase: 'Superseded',
      job: '',
      message: 'superseded: the inputs changed',
    });
    const next = { ...status };
    delete next.pendingPlanRef;
    status = next;
  }
  return {
    planning,
    bookkeeping,
    status,
    events,
    planWrites: planWrites.map((write) =>
      write.kind === 'phase' ? { ...write, message: planning.redactor.redact(write.message) } : write,
    ),
    records: bookkeeping?.records ?? snap.records,
    situation,
  };
}

/** DecideOp (section 3) on the status as this step's bookkeeping leaves it, then the move. */
function decide(base: Base, watched: Watched | undefined): Planned {
  const { planning, status, records, bookkeeping } = base;
  const { snap, facts } = planning;
  if (snap.jobsUnread && !snap.spec) return { kind: 'read', read: 'jobs' };
  if (!snap.spec) return planSpecInvalid(base);
  const spec = snap.spec;
  const retries = retryStatesOf(records, status.attempts);
  const decision = decideOp({
    // A state holding resources overrides a status that records no success at all (a status lost in a
    // restore); after a recorded destroy, what is left is kept and reported (StateKept), never destroyed again.
    ...(facts.state !== undefined &&
    status.lastSuccess?.apply === undefined &&
    status.lastSuccess?.destroy === undefined
      ? { stateHoldsResources: !stateHoldsNothing(facts.state) }
      : {}),
    now: facts.now,
    uid: snap.uid,
    deleting: snap.meta.deletionTimestamp !== undefined,
    ...(snap.meta.annotations?.[DELETE_FOR_MOVE_ANNOTATION] !== undefined ? { deletingForMove: true } : {}),
    inputsHash: snap.inputsHash,
    ...(status.appliedInputsHash !== undefined ? { appliedInputsHash: status.appliedInputsHash } : {}),
    ...(status.lastSuccess ? { lastSuccess: status.lastSuccess } : {}),
    hasRun: status.lastRun !== undefined,
    driftDetected: findCondition(status.conditions, 'DriftDetected')?.status === 'True',
    records,
    applyRetries: retries.apply,
    ...(base.situation.approved ? { approvedPlan: base.situation.approved } : {}),
    driftCheck: spec.driftCheck,
    ...(spec.refresh?.interval ? { refreshInterval: spec.refresh.interval } : {}),
    failedJobsHistoryLimit: planning.policy.failedJobsHistoryLimit,
  });
  if (snap.jobsUnread) {
    // Planned from the object alone (src/core/jobs-read.ts): an idle rest whose retries and suffix the
    // status holds, or the wait the status records, found again unchanged; anything else lists the Jobs.
    if (decision.kind === 'start')
      return (
        keptWithoutJobs(planStart(base, decision, retries[decision.op])) ?? { kind: 'read', read: 'jobs' }
      );
    if (decision.kind !== 'idle' || !idleWithoutJobs(status)) return { kind: 'read', read: 'jobs' };
  }
  switch (decision.kind) {
    case 'watch': {
      const record = records.find((r) => r.name === decision.job);
      const job = snap.jobs.find((j) => j.metadata.name === decision.job);
      if (record?.bookkept && job) {
        // Recorded by a step that then died before deleting it (deadline enforcement): finish the delete.
        return finish(
          base,
          status,
          { kind: 'delete-job', job: jobRef(job), releasePods: [] },
          outcome(planning, 'JobDeadlineExceeded', { requeueAfterSeconds: 1, job: decision.job }),
          false,
        );
      }
      if (watched?.kind !== 'verdict' || watched.record.name !== decision.job) {
        const wait = waitFor('WaitingForCache', {
          now: facts.now,
          uid: snap.uid,
          message: 'the Job is not listed yet',
        });
        return bare({ kind: 'none' }, waitOutcome(base, wait));
      }
      return planWatch(base, watched);
    }
    case 'finalize':
      return planFinalize(base, decision.reason);
    case 'idle': {
      const lastReason: StepReason | undefined = bookkeeping?.runs.at(-1)?.classification.reason;
      return planRest(
        base,
        idleStatus(planning.statusContext, status),
        outcome(planning, lastReason ?? 'UpToDate', {
          requeueAfterSeconds: decision.requeueAfterSeconds,
          bookkept: bookkeeping !== undefined,
          ...lastJob(base),
        }),
      );
    }
    case 'start':
      return planStart(base, decision, retries[decision.op]);
  }
}

/**
 * The newest successful destroy came after the newest successful apply (or no apply succeeded): what the
 * destroy left in the state is no managed resource, even where the controller cannot read it (encrypted).
 */
function destroyedAfterApply(status: TargetStatus): boolean {
  const destroyed = timestampMs(status.lastSuccess?.destroy);
  const applied = timestampMs(status.lastSuccess?.apply);
  return destroyed !== undefined && (applied === undefined || destroyed >= applied);
}

/**
 * Row 1 of section 3: nothing to destroy, so the finalizer goes and the object with it. A copy `clusterctl
 * move` deletes leaves its state to clusterctl, which moved it and deletes the source's.
 */
function planFinalize(
  base: Base,
  reason: 'DeletingWithoutState' | 'DeletingForMove' = 'DeletingWithoutState',
): Planned {
  const { planning, status } = base;
  const { snap, facts } = planning;
  if (reason === 'DeletingForMove') {
    const finalizers = (snap.meta.finalizers ?? []).filter((f) => f !== FINALIZER);
    return finish(
      base,
      status,
      { kind: 'finalizers', finalizers, gone: true },
      outcome(planning, reason),
      false,
    );
  }
  // The state says what is left (only with the default backend and a spec that parses: otherwise the
  // state's home is unknown): a status that records no apply may be a lost one (issue 23 item 5, decided
  // by decideOp once read), and the state objects nobody owns go with the finalizer when they hold nothing
  // (section 12, issue 23 item 3).
  const objects = stateObjectsOf(snap);
  if (objects !== undefined && facts.state === undefined) return { kind: 'read', read: 'state' };
  const state =
    objects !== undefined && facts.state !== undefined
      ? { ...objects, cleanup: decideStateCleanup(objects, facts.state, destroyedAfterApply(status)) }
      : undefined;
  const finalizers = (snap.meta.finalizers ?? []).filter((f) => f !== FINALIZER);
  return finish(
    base,
    status,
    { kind: 'finalizers', finalizers, gone: true, ...(state ? { state } : {}) },
    outcome(planning, 'DeletingWithoutState'),
    false,
  );
}

/**
 * A spec that does not parse (stored before the CRD refused it, or by an older release; DESIGN.md section
 * 2). Nothing starts from it. A deleting object with nothing to destroy is still finalized (row 1 reads no
 * spec); one with state waits `SpecInvalid`, saying what an operator can do: a destroy needs the spec's
 * variables, backend and Job policy, and status records only their hash, so none is run from guesses.
 */
function planSpecInvalid(base: Base): Planned {
  const { planning, status, records } = base;
  const { snap, facts } = planning;
  const problem = snap.specProblem ?? 'the spec does not parse';
  const deleting = snap.meta.deletionTimestamp !== undefined;
  const idle = records.every((r) => r.finished && r.bookkept);
  const evidence = {
    hasRun: status.lastRun !== undefined,
    records,
    ...(status.lastSuccess ? { lastSuccess: status.lastSuccess } : {}),
  };
  if (deleting && idle && withoutState(evidence)) return planFinalize(base);
  const message = deleting
    ? `${problem}; the object is being deleted but its destroy cannot run: a destroy needs the spec's variables, backend and Job policy, and status records only their hash. Fix the spec (it stays editable while the object is deleting) and the destroy starts; or, to leave the infrastructure and its Terraform state behind, remove the finalizer ${FINALIZER}`
    : problem;
  // The op it holds back carries the message (its condition, then Ready): the wait reason alone would not say
  // what does not parse nor, once deleting, what a person can do.
  const op = deleting ? 'destroy' : 'apply';
  const wait = waitFor('SpecInvalid', { now: facts.now, uid: snap.uid, op, message });
  return planRest(base, waitStatus(planning.statusContext, status, wait), waitOutcome(base, wait));
}

function lastJob(base: Base): { job?: string } {
  const job = base.bookkeeping?.runs.at(-1)?.record.name;
  return job !== undefined ? { job } : {};
}

function waitOutcome(base: Base, wait: WaitDecision): StepOutcome {
  return outcome(base.planning, wait.reason, {
    requeueAfterSeconds: wait.requeueAfterSeconds,
    message: wait.message,
    bookkept: base.bookkeeping !== undefined,
    ...lastJob(base),
  });
}

/**
 * Assembles a plan: the bookkeeping writes, `status` as the next status, pruning (always after
 * bookkeeping; on a resting step too), and the pods whose finalizer goes with them.
 */
function finish(base: Base, status: TargetStatus, move: Move, result: StepOutcome, prunes: boolean): Planned {
  const { planning, bookkeeping, records } = base;
  const { snap, facts } = planning;
  const pruneNames = prunes || bookkeeping ? selectJobsToPrune(records, planning.policy) : [];
  // Once our finalizer goes nothing reads the object's pods again: they are released before it (crash-safe).
  const ownerGone = move.kind === 'finalizers' && move.gone;
  const needsPods =
    bookkeeping !== undefined || pruneNames.length > 0 || facts.heldPod !== undefined || ownerGone;
  if (needsPods && facts.pods === undefined) return { kind: 'read', read: 'pods' };
  // Never the Job whose pod holds the state lock the newest run reported (issue 23 item 8): the stale-lock
  // rules (section 12) find the holder among the object's Jobs until a later run got through.
  const holding =
    pruneNames.length > 0 && facts.pods !== undefined
      ? lockHoldingJob(snap.jobs, records, facts.pods, facts.now)
      : undefined;
  const prune = pruneNames
    .filter((name) => name !== holding)
    .flatMap((name) => {
      const job = snap.jobs.find((j) => j.metadata.name === name);
      return job ? [{ ...jobRef(job), runLog: runLogSecretName(name) }] : [];
    });
  // Whenever the pods were read (to bookkeep, watch or guard a start), what the rule allows is released:
  // a held pod of a Job deleted by hand would otherwise hold the next start back until the sweep.
  const released =
    facts.pods !== undefined
      ? podsReleasedBy(
          planning,
          records,
          prune.map((p) => p.uid),
          ownerGone,
        )
      : [];
  // A cluster whose apply this step recorded is ready: its machines and pools waiting for it go now.
  const ready =
    snap.ref.kind === 'TerraformCluster' &&
    (bookkeeping?.runs.some((run) => run.classification.success && run.classification.op === 'apply') ??
      false);
  // Recording a finished Job (or deleting a stuck one) releases its leases and slots: their waiters go now.
  const releases = (bookkeeping?.runs.length ?? 0) > 0 || (move.kind === 'delete-job' && move.release);
  const wakes = releases ? { wakes: releaseWakes(snap.ref, snap.clusterName) } : {};
  return {
    kind: 'plan',
    bookkept: bookkeeping?.runs ?? [],
    plans: base.planWrites,
    spec: bookkeeping && Object.keys(bookkeeping.spec).length > 0 ? bookkeeping.spec : undefined,
    // Written only when something changed; a write always names the generation it saw.
    // A start or a watch writes its own status with the Paused condition (its move's); the rest here.
    status: withGeneration(
      changed(
        snap.status,
        move.kind === 'rest' || move.kind === 'delete-job' ? pausedStatus(planning, status) : status,
      ),
      snap.generation,
    ),
    events: base.events,
    prune,
    releasePods: released,
    move,
    outcome: { ...result, ...(ready ? { wakesDependents: true } : {}), ...wakes },
  };
}

/**
 * What a gate's wait is woken by (src/core/wake.ts): the TerraformCluster whose infrastructure it waits for
 * (`cluster`, when that is the cause), the bootstrap data Secret its owner names, the Job slots found full
 * (`slotScopes`). The other gates' waits end by the object's own events (approval, pause, owner) or by time
 * (backoff, policy).
 */
function gateWaitsFor(
  snap: Snapshot,
  reason: WaitDecision['reason'],
  cluster: Snapshot['owningCluster'],
  slotScopes: readonly SlotScope[],
): Pick<StepOutcome, 'waitsFor'> {
  if (reason === 'WaitingForDependencies' && cluster !== undefined && !cluster.ready)
    return { waitsFor: [{ kind: 'TerraformCluster', namespace: snap.ref.namespace, name: cluster.name }] };
  const bootstrap = snap.capi?.owner?.bootstrapDataSecretName;
  if (reason === 'WaitingForBootstrapData' && bootstrap !== undefined)
    return secretWaitOf(snap.ref, bootstrap);
  if (reason === 'WaitingForJobSlot')
    return { waitsFor: fullJobSlotSources(snap.ref.namespace, snap.clusterName, slotScopes) };
  return {};
}

/**
 * What a start held back at its guards is woken by: the release of its lease group or of a slot of the
 * Job slot set found full.
 */
function heldWaitsFor(snap: Snapshot, held: HeldWait): Pick<StepOutcome, 'waitsFor'> {
  const { reason } = held;
  if (reason === 'WaitingForJobSlot')
    return {
      waitsFor: fullJobSlotSources(
        snap.ref.namespace,
        snap.clusterName,
        held.slotScope === undefined ? [] : [held.slotScope],
      ),
    };
  if (
    reason === 'WaitingForRunLease' ||
    reason === 'WaitingForClusterOperation' ||
    reason === 'WaitingForMachineOperations'
  )
    return { waitsFor: [runLeasesSource(snap.ref, snap.clusterName)] };
  return {};
}

/**
 * `status` with what every status a step writes carries: the Paused condition of the snapshot, and the
 * state suffix a Job of the object carries when the status records none (its start's write was lost).
 */
function pausedStatus(planning: Planning, status: TargetStatus): TargetStatus {
  return pausedStatusOf(planning.snap, planning.facts.now, status);
}

function pausedStatusOf(snap: Snapshot, now: Date, status: TargetStatus): TargetStatus {
  const conditions = withPausedCondition(status.conditions ?? [], snap.paused, {
    now,
    generation: snap.generation,
  });
  const suffix = unrecordedStateSuffix(status, jobStateSuffixes(snap.jobs));
  return { ...status, conditions, ...(suffix !== undefined ? { stateSuffix: suffix } : {}) };
}

/** A wait or idle step: the status, pruning, and a stale lease healed. */
function planRest(base: Base, status: TargetStatus, result: StepOutcome): Planned {
  return finish(base, status, { kind: 'rest', healLease: true }, result, true);
}

/** The pods no bookkeeping will read again, once this step's marks and prunes are written. */
function podsReleasedBy(
  planning: Planning,
  records: readonly JobRecord[],
  pruning: readonly string[],
  ownerGone: boolean,
): string[] {
  const { snap, facts } = planning;
  const jobs = snap.jobs.flatMap((job) => {
    const uid = job.metadata.uid;
    if (uid === undefined) return [];
    const record = records.find((r) => r.name === job.metadata.name);
    return [
      {
        uid,
        bookkept: record?.bookkept ?? false,
        finished: record?.finished ?? false,
        deleting: job.metadata.deletionTimestamp !== undefined,
      },
    ];
  });
  return podsToRelease({ pods: facts.pods ?? [], jobs, pruning, ownerGone }).map(
    ({ pod }) => pod.metadata.name,
  );
}

/** Watching the active Job (DESIGN.md section 5 step 4), past deadline enforcement. */
function planWatch(base: Base, watched: Extract<Watched, { kind: 'verdict' }>): Planned {
  const { planning } = base;
  const { snap, facts } = planning;
  const { job, record, verdict } = watched;
  const ref = jobRef(job);
  const guard = guardOf(
    record.op,
    record.name,
    job.spec?.activeDeadlineSeconds ?? planning.policy.activeDeadlineSeconds,
    runClusterOf(job),
  );

  if (verdict.kind === 'delete') {
    // Stuck (its Secret is gone) or unstarted while the object is deleting: no tofu ran, no run to record.
    const next: TargetStatus = { ...base.status };
    if (next.activeJob?.name === record.name) delete next.activeJob;
    delete next.waitReason;
    const stuck = runEvent(verdict.reason, {
      action: 'DeleteJob',
      note: planning.redactor.redact(`Job ${record.name}: ${verdict.message}`),
      transitionKey: record.name,
    });
    return finish(
      { ...base, events: [...base.events, stuck] },
      next,
      { kind: 'delete-job', job: ref, release: guard, releasePods: [] },
      outcome(planning, verdict.reason, { job: record.name, message: verdict.message }),
      false,
    );
  }

  // C02: the step that created the Job died before its Secret; the same inputs give the same run config.
  const pods = podsOfJob(job, facts.pods ?? []);
  let adopt: Omit<RunConfigSource, 'planHmacKey'> | undefined;
  if (
    !watched.runSecretExists &&
    job.metadata.annotations?.[ANNOTATIONS.inputsHash] === snap.inputsHash &&
    pods.every((pod) => isPodAlive(pod))
  ) {
    const inputs = resolveRunInputs(
      snap,
      record.op,
      planning.policy,
      decisionsOf(job),
      facts.config.stateEncryption,
    );
    if (inputs.kind !== 'resolved') {
      const reason = inputs.kind === 'missing' ? 'WaitingForDependencies' : 'VariablesSecretNotOptedIn';
      const wait = waitFor(reason, {
        now: facts.now,
        uid: snap.uid,
        op: record.op,
        message: inputs.message,
      });
      return finish(
        base,
        base.status,
        { kind: 'none' },
        { ...waitOutcome(base, wait), ...secretWaitOf(snap.ref, inputs.secret), job: record.name },
        false,
      );
    }
    adopt = inputs.source;
  }
  const createdAt = job.metadata.creationTimestamp
    ? new Date(job.metadata.creationTimestamp).toISOString()
    : facts.now.toISOString();
  const current = base.status.activeJob;
  const activeJob =
    current?.name === record.name
      ? current
      : { name: record.name, op: record.op, attempt: Math.max(1, record.attempt), startedAt: createdAt };
  const message = verdict.reason === 'JobActive' ? `${record.op} Job ${record.name} runs` : verdict.message;
  const watching = activeStatus(
    planning.statusContext,
    { ...base.status, attempts: withStarted(base.status.attempts, record.op, activeJob.attempt) },
    activeJob,
    verdict.reason,
    message,
  );
  return finish(
    base,
    base.status,
    {
      kind: 'watch',
      job: { ...ref, op: record.op, attempt: activeJob.attempt },
      guard,
      status: pausedStatus(planning, { ...watching, observedGeneration: snap.generation }),
      ...(adopt ? { adopt } : {}),
    },
    outcome(planning, verdict.reason, {
      requeueAfterSeconds: verdict.requeueAfterSeconds,
      job: record.name,
      ...(verdict.reason !== 'JobActive' ? { message: verdict.message } : {}),
    }),
    false,
  );
}

/**
 * A run held back by a Secret that did not opt in (issue 16 item 1): no Job, the wait, and a Warning Event
 * when the object was not already waiting for this (a wait is written once; so is its Event).
 */
function holdBackNotOptedIn(base: Base, op: Op, notOptedIn: NotOptedIn): Planned {
  const { planning } = base;
  const { snap, facts } = planning;
  const wait = waitFor('VariablesSecretNotOptedIn', {
    now: facts.now,
    uid: snap.uid,
    op,
    message: notOptedIn.message,
  });
  const status = waitStatus(planning.statusContext, base.status, wait);
  const condition = OP_CONDITION[op];
  const repeated =
    snap.status.waitReason === wait.reason &&
    findCondition(snap.status.conditions, condition)?.message ===
      findCondition(status.conditions, condition)?.message;
  const event = notOptedInEvent(notOptedIn, snap.inputsHash);
  const events = repeated
    ? base.events
    : [...base.events, { ...event, note: planning.redactor.redact(event.note) }];
  return planRest({ ...base, events }, status, {
    ...waitOutcome(base, wait),
    ...secretWaitOf(snap.ref, notOptedIn.secret),
  });
}

/** A wait woken by the watch event of the Secret `name` of the object's namespace (src/core/wake.ts). */
function secretWaitOf(ref: ObjectRef, name: string | undefined): Pick<StepOutcome, 'waitsFor'> {
  return name === undefined ? {} : { waitsFor: [secretSource(ref.namespace, name)] };
}

/**
 * An apply held back because the state of a provisioned object is gone (issue 23 item 5): no Job, the wait,
 * and a Warning Event when the object was not already waiting for this.
 */
function holdBackStateMissing(base: Base, message: string): Planned {
  const { planning } = base;
  const { snap, facts } = planning;
  const wait = waitFor('StateMissing', { now: facts.now, uid: snap.uid, op: 'apply', message });
  const status = waitStatus(planning.statusContext, base.status, wait);
  const repeated =
    snap.status.waitReason === wait.reason &&
    findCondition(snap.status.conditions, OP_CONDITION.apply)?.message ===
      findCondition(status.conditions, OP_CONDITION.apply)?.message;
  const event = runEvent('StateMissing', {
    action: 'Reconcile',
    note: planning.redactor.redact(message),
    transitionKey: snap.inputsHash,
  });
  return planRest(
    { ...base, events: repeated ? base.events : [...base.events, event] },
    status,
    waitOutcome(base, wait),
  );
}

/** The gates, then the start (DESIGN.md section 5 steps 5 to 8). */
function planStart(base: Base, decision: StartDecision, retries: RetryState): Planned {
  const { planning } = base;
  const { snap, facts, policy } = planning;
  const op = decision.op;
  const cluster = snap.owningCluster;
  // Machines and pools build on their cluster's infrastructure, and under Cluster API on their owner and
  // bootstrap data; a destroy never waits for any of it.
  const capiHold = op === 'destroy' ? undefined : capiWait(snap.ref.kind, snap.capi);
  // A cluster whose spec or status does not parse holds every op, a destroy too: its defaults are the
  // Jobs policy of the machine's runs (issue 23).
  const dependencies: GateInput['dependencies'] = cluster?.unreadable
    ? {
        ready: false,
        message: `TerraformCluster ${cluster.name} has fields that do not parse: ${cluster.unreadable.join(', ')}`,
      }
    : capiHold
      ? { ready: false, reason: capiHold.reason, message: capiHold.message }
      : op !== 'destroy' && cluster !== undefined && !cluster.ready
        ? { ready: false, message: `TerraformCluster ${cluster.name} is not ready yet` }
        : { ready: true };
  const gateInput = (slots: { installation: number; cluster: number }): GateInput => ({
    now: facts.now,
    uid: snap.uid,
    inputsHash: snap.inputsHash,
    records: base.records,
    retries,
    failedJobsHistoryLimit: policy.failedJobsHistoryLimit,
    approval: base.situation.approval,
    paused: snap.paused,
    dependencies,
    slots: {
      installationActive: slots.installation,
      installationLimit: facts.config.maxActiveJobs,
      clusterActive: slots.cluster,
      clusterLimit: facts.config.clusterMaxActiveJobs,
    },
    policyProblems: jobsPolicyProblems(policy),
  });
  // The gates before the slots need no Redis read; the usage is read only when they all pass.
  const unread = applyGates(decision, gateInput({ installation: 0, cluster: 0 }));
  const early = unread.kind === 'wait' && unread.reason !== 'JobPolicyInvalid' ? unread : undefined;
  if (early === undefined && facts.slots === undefined) return { kind: 'read', read: 'slots' };
  const read = gateInput({
    installation: facts.slots?.installation ?? 0,
    cluster: facts.slots?.cluster ?? 0,
  });
  const gated = early ?? applyGates(decision, read);
  if (gated.kind === 'wait') {
    return planRest(base, waitStatus(planning.statusContext, base.status, gated), {
      ...waitOutcome(base, gated),
      ...gateWaitsFor(
        snap,
        gated.reason,
        capiHold === undefined ? cluster : undefined,
        fullSlotScopes(op, read.slots),
      ),
    });
  }

  // Issue 23 item 5: an object that shows it was provisioned never applies from a lost state unasked, and
  // never destroys from one either: a destroy of an empty state succeeds destroying nothing, the finalizer
  // goes, and the infrastructure is left running with nothing to say so.
  const provisioned = op === 'apply' || op === 'destroy' ? provisionedBy(snap, base.status) : undefined;
  const stateSecret = provisioned !== undefined ? checkedStateSecret(snap) : undefined;
  if (stateSecret !== undefined && facts.state === undefined) return { kind: 'read', read: 'state' };
  const fromNothing = stateSecret !== undefined && facts.state !== undefined && stateLost(facts.state);
  if (fromNothing && !acceptsEmptyState(snap))
    return holdBackStateMissing(
      base,
      `${provisioned} shows the object was provisioned, but its state Secret ${stateSecret.name} is ${facts.state === 'missing' ? 'missing' : 'empty (never written)'}; set the annotation ${ACCEPT_EMPTY_STATE_ANNOTATION} to ${op} from an empty state${op === 'destroy' ? ' (it destroys nothing: what the lost state managed stays until removed by hand)' : ''}`,
    );

  // An object none of whose Jobs was ever seen has no pod to guard against (src/core/pods.ts mayHavePods).
  if (facts.pods === undefined && mayHavePods(snap)) return { kind: 'read', read: 'pods' };
  const pods = facts.pods ?? [];
  const holdBack = (
    reason: 'WaitingForPreviousAttempt' | 'WaitingForDependencies',
    message: string,
    secret?: string,
  ) => {
    const wait = waitFor(reason, { now: facts.now, uid: snap.uid, op, message });
    return planRest(base, waitStatus(planning.statusContext, base.status, wait), {
      ...waitOutcome(base, wait),
      ...secretWaitOf(snap.ref, secret),
    });
  };
  // API guard (section 5 step 7): no pod of an earlier attempt may live, whichever Job it belonged to; pods
  // are told apart by their Job's UID, never by a name (a Job name can be reused by a person). Redis is
  // never the only guard.
  const alive = pods.filter((pod) => isPodAlive(pod));
  if (alive.length > 0)
    return holdBack(
      'WaitingForPreviousAttempt',
      `pod(s) of an earlier attempt still run: ${alive.map((pod) => pod.metadata.name).join(', ')}`,
    );
  const unlock = staleLockToUnlock(snap.jobs, base.records, pods, facts.now, {
    kind: snap.ref.kind,
    name: snap.ref.name,
    ...(facts.lockHolder !== undefined ? { holderRead: facts.lockHolder } : {}),
  });
  // A holder named like this object's Jobs whose Job is gone (pruned, deleted past its deadline): its pod is
  // read live, once, before the start (issue 23 item 8).
  if (typeof unlock === 'object') return { kind: 'read', read: 'lock-holder', pod: unlock.read };
  const forceUnlockId = unlock;
  const decisions: RunDecisions = {
    ...(gated.plan ? { expectedPlanDigest: gated.plan.digest } : {}),
    ...(forceUnlockId ? { forceUnlockId } : {}),
  };
  // A missing Secret must hold the start back before anything is taken (section 5 step 6).
  const inputs: RunInputs = resolveRunInputs(snap, op, policy, decisions, facts.config.stateEncryption);
  if (inputs.kind === 'missing') return holdBack('WaitingForDependencies', inputs.message, inputs.secret);
  if (inputs.kind === 'not-opted-in') return holdBackNotOptedIn(base, op, inputs);

  // Drift and refresh repeat with equal inputs; the newest success separates one run from the next.
  const tick = op === 'drift' || op === 'refresh' ? (base.status.lastSuccess?.[op] ?? '') : '';
  const { attempt, name, skipped } = freeJobName(
    { kind: snap.ref.kind, name: snap.ref.name, op, inputsHash: snap.inputsHash, tick },
    nextAttemptOf(base.records, op, base.status.attempts),
    new Set(facts.takenJobNames ?? []),
  );
  // Kept in the status and the JobCreated Event: why this object's first Job is not attempt 1.
  const skipNote =
    skipped.length > 0
      ? `; skipped ${skipped.join(', ')}: finished, not this object's (a predecessor of the same name)`
      : '';
  // A wait after a skip keeps the skipped attempts as used, so the next step does not collide again.
  const waitBase: TargetStatus =
    skipped.length > 0
      ? { ...base.status, attempts: withStarted(base.status.attempts, op, attempt - 1) }
      : base.status;
  const image = snap.spec?.source.image ?? '';
  const owner = {
    apiVersion: API_VERSION,
    kind: snap.ref.kind,
    name: snap.ref.name,
    namespace: snap.ref.namespace,
    uid: snap.uid,
  };
  const { serviceAccountName, identity } = runnerAccountOf(policy.serviceAccountName, {
    owner,
    source: inputs.source,
  });
  const manifest = buildJobManifest({
    owner: { ...owner, generation: snap.generation, clusterName: snap.clusterName ?? '' },
    name,
    op,
    attempt,
    inputsHash: snap.inputsHash,
    // Every op but apply runs the digest the newest successful apply ran (DESIGN.md section 2).
    image: op === 'apply' ? image : (base.status.source?.pinnedImage ?? image),
    runnerImage: facts.config.runnerImage,
    policy,
    serviceAccountName,
    stateSuffix: inputs.source.stateSuffix,
  });
  const activeJob = { name, op, attempt, startedAt: facts.now.toISOString() };
  const running = activeStatus(
    planning.statusContext,
    { ...base.status, attempts: withStarted(base.status.attempts, op, attempt) },
    activeJob,
    'JobActive',
    `${op} Job ${name} runs (${gated.reason}${skipNote})`,
  );
  const start: PlannedStart = {
    op,
    reason: gated.reason,
    name,
    attempt,
    skipped,
    manifest,
    decisions,
    annotations: decisionAnnotations(decisions),
    inputs: inputs.source,
    ...(identity ? { identity } : {}),
    ...(inputs.source.outputsSecretName
      ? {
          outputsSecret: buildOutputsSecret({
            owner,
            secretName: inputs.source.outputsSecretName,
            writer: serviceAccountName,
          }),
        }
      : {}),
    guard: guardOf(op, name, policy.activeDeadlineSeconds),
    // The suffix this run names its state by, kept for every later run (src/core/state-identity.ts).
    status: pausedStatus(planning, {
      ...running,
      observedGeneration: snap.generation,
      stateSuffix: inputs.source.stateSuffix,
    }),
    ...(fromNothing ? { consumeAnnotation: ACCEPT_EMPTY_STATE_ANNOTATION } : {}),
    // Issue 23 item 8: the state Secret comes back only under the StateMissing rules: an object that shows
    // no provisioning has nothing to lose, and a lost state a person accepted starts from nothing.
    ...(identity && (fromNothing || provisionedBy(snap, base.status) === undefined)
      ? { restoreStateSecret: true }
      : {}),
    createdEvent: runEvent('JobCreated', {
      action: 'CreateJob',
      note: planning.redactor.redact(
        `${op} Job ${name} (attempt ${attempt}, ${gated.reason}${fromNothing ? `, from an empty state: ${ACCEPT_EMPTY_STATE_ANNOTATION}` : ''}${skipNote})`,
      ),
      transitionKey: name,
    }),
    ...(forceUnlockId
      ? {
          forceUnlockEvent: runEvent('ForceUnlocked', {
            action: 'CreateJob',
            note: planning.redactor.redact(`Job ${name} force-unlocks the stale state lock ${forceUnlockId}`),
            transitionKey: forceUnlockId,
          }),
        }
      : {}),
    outcome: outcome(planning, gated.reason, {
      job: name,
      ...(skipNote !== '' ? { message: `attempt ${attempt}${skipNote}` } : {}),
    }),
    held: { status: waitBase, now: facts.now, bookkept: base.bookkeeping !== undefined, ...lastJob(base) },
  };
  return finish(base, base.status, { kind: 'start', start }, start.outcome, false);
}

/**
 * The status and outcome of a wait the Redis guards or a foreign Job impose on `start` at perform time
 * (DESIGN.md section 5 steps 6 and 8): the wait over the status `start.held` planned, with the Paused
 * condition of `snap` (the snapshot the start was planned from), woken by what it waits for.
 */
export function heldOutcome(
  start: PlannedStart,
  held: HeldWait,
  snap: Snapshot,
): { status: TargetStatus | undefined; outcome: StepOutcome } {
  const { now } = start.held;
  const redactor = snapshotRedactor(snap);
  const context: StatusContext = {
    now,
    generation: snap.generation,
    deleting: snap.meta.deletionTimestamp !== undefined,
    redactor,
  };
  const wait = waitFor(held.reason, { now, uid: snap.uid, op: start.op, message: held.message });
  return {
    status: pausedStatusOf(snap, now, {
      ...waitStatus(context, start.held.status, wait),
      observedGeneration: snap.generation,
    }),
    outcome: {
      ...outcomeOf(snap.ref, wait.reason, {
        requeueAfterSeconds: wait.requeueAfterSeconds,
        bookkept: start.held.bookkept,
        ...(start.held.job !== undefined ? { job: start.held.job } : {}),
        message: redactor.redact(wait.message),
      }),
      ...(held.reason === 'WaitingForForeignJob' ? { job: start.name } : {}),
      ...heldWaitsFor(snap, held),
    },
  };
}
