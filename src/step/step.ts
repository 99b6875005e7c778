import { isKubeError } from '../adapters/kube/errors.ts';
import type { PlanSituation } from '../core/approval.ts';
import type { JobRecord } from '../core/job-record.ts';
import { resolveJobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import {
  type Bookkeeping,
  emitEvents,
  finishBookkeeping,
  jobsToBookkeep,
  prepareBookkeeping,
  prune,
  writeBeforeStatus,
  writePlanPhase,
} from './bookkeep.ts';
import { regardingOf, type StepContext } from './context.ts';
import type { ObjectRef, ReconcileStep, StepOptions, StepOutcome } from './contract.ts';
import { decideNext, type NextMove } from './decision.ts';
import type { StepDeps } from './deps.ts';
import { FailpointAbort } from './failpoints.ts';
import { healStaleLease } from './heal-lease.ts';
import { outcomeOf, UNAVAILABLE_RETRY_SECONDS, unavailable } from './outcomes.ts';
import { plansAfterBookkeeping } from './plan-situation.ts';
import { releasePodFinalizers } from './pod-finalizers.ts';
import { FINALIZER, preamble } from './preamble.ts';
import { redactorOf } from './redact.ts';
import { readSnapshot, type Snapshot, type TargetStatus } from './snapshot.ts';
import { startJob } from './start-job.ts';
import { commitStatus } from './status-write.ts';
import { type KeptStepLock, keepStepLock } from './step-lock.ts';
import { idleStatus, waitStatus } from './wait-status.ts';
import { watchActive } from './watch-active.ts';

/**
 * The reconcile step (DESIGN.md section 5), from step lock to outcome: lock, read live, preamble, bookkeep,
 * watch or decide and start, release the lock. The caller turns the outcome into the HTTP answer and the
 * requeue (src/http/outcome.ts `resolveOutcome`, then the Redis schedule's `add`): this module schedules
 * nothing itself, so a dry run and a test can call it without side effects on the schedule.
 */

/** DESIGN.md section 5 step 1: another call holds the step lock; look again in 2 s. */
export const STEP_LOCK_HELD_REQUEUE_SECONDS = 2;

/** Builds the step over its dependencies. */
export function createReconcileStep(deps: StepDeps): ReconcileStep {
  return async (ref: ObjectRef, options: StepOptions = {}): Promise<StepOutcome> => {
    const bare = { snap: { ref }, redact: (text: string) => text };
    if (options.dryRun === true) return guarded(bare, () => explain(deps, ref));
    const lock = await deps.redis.takeStepLock(ref);
    if (lock.kind === 'unknown') return unavailable(bare, `take the step lock: ${lock.cause.message}`);
    if (lock.kind === 'held')
      return outcomeOf(bare, 'deferred', 'StepLockHeld', STEP_LOCK_HELD_REQUEUE_SECONDS);
    deps.failpoints.hit('after-step-lock');
    const kept = keepStepLock(deps.redis, ref, lock.token);
    try {
      return await guarded(bare, () => reconcile(deps, ref, kept));
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
async function guarded(
  context: Parameters<typeof outcomeOf>[0],
  body: () => Promise<StepOutcome>,
): Promise<StepOutcome> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof FailpointAbort || !isKubeError(error)) throw error;
    if (error.outage)
      return outcomeOf(
        context,
        'unavailable',
        'Unavailable',
        error.retryAfterSeconds ?? UNAVAILABLE_RETRY_SECONDS,
        { message: error.message },
      );
    if (error.code === 'Conflict')
      return outcomeOf(context, 'waiting', 'Conflict', 1, { message: error.message });
    return outcomeOf(context, 'waiting', error.code, 60, { message: error.message });
  }
}

function contextOf(deps: StepDeps, snap: Snapshot): StepContext {
  return {
    deps,
    snap,
    now: new Date(deps.clock.nowMs()),
    redact: redactorOf(snap.referencedSecrets),
    policy: resolveJobsPolicy(snap.spec?.jobs, snap.owningCluster?.defaultsJobs),
    resourceVersion: snap.resourceVersion,
    status: structuredClone(snap.status),
    draft: structuredClone(snap.status),
    regarding: regardingOf(snap),
  };
}

/** The plans the decision reads: as this step's bookkeeping leaves them (C19, src/step/plan-situation.ts). */
function plansOf(context: StepContext, bookkeeping: Bookkeeping | undefined): PlanSituation {
  const { snap } = context;
  return plansAfterBookkeeping({
    ...(snap.pendingPlan ? { pendingPlan: snap.pendingPlan } : {}),
    uid: snap.uid,
    inputsHash: snap.inputsHash,
    changes: bookkeeping?.plans ?? [],
    status: bookkeeping?.status ?? context.draft,
  });
}

/** `status` without a pending plan that the input change superseded (DESIGN.md section 11, C18). */
function withoutSuperseded(status: TargetStatus, plans: PlanSituation): TargetStatus {
  if (status.pendingPlanRef && plans.supersede.includes(status.pendingPlanRef.name)) {
    const next = { ...status };
    delete next.pendingPlanRef;
    return next;
  }
  return status;
}

/**
 * A Job named by `status.activeJob` that the API server no longer lists was deleted before it finished
 * (DESIGN.md section 4: an interruption that is not a deadline kill, retried at once). Its run cannot be
 * read any more; one `JobInterrupted` Event says so, and the next status write drops `activeJob`.
 */
async function reportLostActiveJob(context: StepContext): Promise<void> {
  const lost = context.draft.activeJob?.name;
  if (lost === undefined || context.snap.records.some((record) => record.name === lost)) return;
  await emitEvents(context, [
    {
      type: 'Warning',
      reason: 'JobInterrupted',
      action: 'Reconcile',
      note: `Job ${lost} was deleted before it finished; the run is retried`,
      transitionKey: lost,
    },
  ]);
}

async function reconcile(deps: StepDeps, ref: ObjectRef, lock: KeptStepLock): Promise<StepOutcome> {
  const snap = await readSnapshot(deps.kube.reader, ref);
  if (!snap) return { ref, action: 'gone', reason: 'ObjectGone' };
  const context = contextOf(deps, snap);
  const outcome = await reconcileObject(deps, ref, lock, snap, context);
  // The version the step's own writes left (context.resourceVersion moves with each of them).
  return outcome.action === 'unavailable'
    ? outcome
    : { ...outcome, observed: { uid: snap.uid, resourceVersion: context.resourceVersion } };
}

async function reconcileObject(
  deps: StepDeps,
  ref: ObjectRef,
  lock: KeptStepLock,
  snap: Snapshot,
  context: StepContext,
): Promise<StepOutcome> {
  const pre = preamble(snap.object.metadata);
  if (pre.kind === 'leave-alone')
    return outcomeOf(context, 'none', pre.reason, 3600, { message: pre.message });
  if (pre.kind === 'not-ours') return outcomeOf(context, 'none', pre.reason, undefined);
  if (pre.kind === 'add-finalizer') {
    await deps.kube.writer.patchCustomMetadata(
      ref.kind,
      { ...ref, resourceVersion: snap.resourceVersion },
      { finalizers: pre.finalizers },
    );
    deps.failpoints.hit('after-finalizer-patch');
    return outcomeOf(context, 'none', pre.reason, 1);
  }

  const finished = jobsToBookkeep(context);
  const bookkeeping = finished.length > 0 ? await prepareBookkeeping(context, finished) : undefined;
  const records = bookkeeping?.records ?? snap.records;
  await reportLostActiveJob(context);
  const plans = plansOf(context, bookkeeping);
  const supersededPlan =
    snap.pendingPlan && plans.supersede.includes(snap.pendingPlan.metadata.name)
      ? snap.pendingPlan
      : undefined;
  context.draft = withoutSuperseded(context.draft, plans);
  if (bookkeeping) bookkeeping.status = withoutSuperseded(bookkeeping.status, plans);

  // Bookkeeping is recorded on the status the decision reads (lastSuccess, appliedInputsHash).
  const decisionContext: StepContext = { ...context, draft: bookkeeping?.status ?? context.draft };
  const move = await decideNext(decisionContext, records, plans, () =>
    deps.redis.jobSlots.usage(
      snap.clusterName !== undefined ? { namespace: ref.namespace, name: snap.clusterName } : undefined,
    ),
  );
  if (move.kind === 'unknown') return unavailable(context, `read the Job slots: ${move.cause.message}`);

  if (supersededPlan) {
    await writePlanPhase(context, {
      kind: 'phase',
      plan: supersededPlan,
      phase: 'Superseded',
      job: '',
      message: 'superseded: the inputs changed',
    });
    deps.failpoints.hit('after-plan-write');
  }

  // One status write when the move only waits: bookkeeping and the wait go out together.
  if (move.kind === 'wait' || move.kind === 'idle' || move.kind === 'spec-invalid') {
    const base = decisionContext.draft;
    const next = move.kind === 'idle' ? idleStatus(context, base) : waitStatus(context, base, move.wait);
    const recorded = await recordAndWrite(context, bookkeeping, next);
    if (recorded) return recorded;
    await healStaleLease(context, records);
    if (!bookkeeping) await releasePodFinalizers(context, records, await prune(context, records));
    return finalOutcome(context, move, bookkeeping);
  }

  if (bookkeeping) {
    const recorded = await recordAndWrite(context, bookkeeping, bookkeeping.status);
    if (recorded) return recorded;
  }
  // A step that outlived its lock (src/step/step-lock.ts) starts nothing: another step may own the object.
  if (move.kind === 'start' && lock.lost())
    return outcomeOf(context, 'deferred', 'StepLockLost', STEP_LOCK_HELD_REQUEUE_SECONDS);
  return act(context, move, records);
}

/**
 * Writes bookkeeping (plans and spec first, the status, then events, marks, Secrets, leases, pruning) or,
 * without bookkeeping, just the status. Returns an outcome only when the status write lost a Conflict.
 */
async function recordAndWrite(
  context: StepContext,
  bookkeeping: Bookkeeping | undefined,
  next: TargetStatus,
): Promise<StepOutcome | undefined> {
  if (bookkeeping) await writeBeforeStatus(context, bookkeeping);
  const written = await commitStatus(context, next);
  if (written.kind === 'conflict')
    return outcomeOf(context, 'waiting', 'Conflict', 1, { message: written.message });
  if (bookkeeping) {
    context.deps.failpoints.hit('after-bookkeep-status');
    await finishBookkeeping(context, bookkeeping);
  }
  return undefined;
}

function finalOutcome(
  context: StepContext,
  move: Extract<NextMove, { kind: 'wait' | 'idle' | 'spec-invalid' }>,
  bookkeeping: Bookkeeping | undefined,
): StepOutcome {
  const job = bookkeeping?.runs.at(-1)?.record.name;
  const extras = job !== undefined ? { job } : {};
  if (move.kind === 'idle') {
    return outcomeOf(
      context,
      bookkeeping ? 'bookkept' : 'none',
      bookkeeping ? lastReason(bookkeeping) : 'UpToDate',
      move.requeueAfterSeconds,
      extras,
    );
  }
  const action = bookkeeping ? 'bookkept' : 'waiting';
  return outcomeOf(context, action, move.wait.reason, move.wait.requeueAfterSeconds, {
    ...extras,
    message: move.wait.message,
  });
}

function lastReason(bookkeeping: Bookkeeping): string {
  return bookkeeping.runs.at(-1)?.classification.reason ?? 'Bookkept';
}

/** The moves that act: watch the active Job, start a Job, or drop the finalizer. */
async function act(
  context: StepContext,
  move: Extract<NextMove, { kind: 'watch' | 'start' | 'finalize' }>,
  records: readonly JobRecord[],
): Promise<StepOutcome> {
  const { deps, snap } = context;
  switch (move.kind) {
    case 'watch': {
      const job = snap.jobs.find((j) => j.metadata?.name === move.record.name);
      if (!job) return outcomeOf(context, 'waiting', 'WaitingForCache', 5);
      return watchActive(context, job, move.record);
    }
    case 'start':
      return startJob(context, move.start, records);
    case 'finalize': {
      const finalizers = (snap.object.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
      await deps.kube.writer.patchCustomMetadata(
        snap.ref.kind,
        { ...snap.ref, resourceVersion: context.resourceVersion },
        { finalizers },
      );
      deps.failpoints.hit('after-finalizer-patch');
      await deps.metrics.objectGone(snap.ref);
      return outcomeOf(context, 'finalized', 'DeletingWithoutState', undefined);
    }
  }
}

/**
 * A dry run (`POST /reconcile?dryRun=true`): the same reads and decisions, no lock and no write. Slot usage
 * is read (a read), so the answer names a slot wait as the real step would.
 */
async function explain(deps: StepDeps, ref: ObjectRef): Promise<StepOutcome> {
  const snap = await readSnapshot(deps.kube.reader, ref);
  if (!snap) return { ref, action: 'gone', reason: 'ObjectGone' };
  const context = contextOf(deps, snap);
  const pre = preamble(snap.object.metadata);
  if (pre.kind !== 'proceed')
    return outcomeOf(context, 'none', pre.reason, undefined, { message: `dry run: ${pre.reason}` });
  const finished = jobsToBookkeep(context);
  const bookkeeping = finished.length > 0 ? await prepareBookkeeping(context, finished) : undefined;
  const records = bookkeeping?.records ?? snap.records;
  const plans = plansOf(context, bookkeeping);
  const decisionContext: StepContext = {
    ...context,
    draft: withoutSuperseded(bookkeeping?.status ?? context.draft, plans),
  };
  const move = await decideNext(decisionContext, records, plans, () =>
    deps.redis.jobSlots.usage(
      snap.clusterName !== undefined ? { namespace: ref.namespace, name: snap.clusterName } : undefined,
    ),
  );
  if (move.kind === 'unknown') return unavailable(context, `read the Job slots: ${move.cause.message}`);
  const booked = bookkeeping
    ? `would record ${bookkeeping.runs.map((r) => `${r.record.name} as ${r.classification.reason}`).join(', ')}; `
    : '';
  switch (move.kind) {
    case 'watch':
      return outcomeOf(context, 'watching', 'JobActive', 60, {
        job: move.record.name,
        message: `dry run: ${booked}would watch ${move.record.name}`,
      });
    case 'start':
      return outcomeOf(context, 'waiting', move.start.reason, 0, {
        message: `dry run: ${booked}would start ${move.start.op}`,
      });
    case 'finalize':
      return outcomeOf(context, 'waiting', 'DeletingWithoutState', 0, {
        message: `dry run: ${booked}would remove the finalizer`,
      });
    case 'idle':
      return outcomeOf(context, 'none', 'UpToDate', move.requeueAfterSeconds, {
        message: `dry run: ${booked}up to date`,
      });
    case 'wait':
    case 'spec-invalid':
      return outcomeOf(context, 'waiting', move.wait.reason, move.wait.requeueAfterSeconds, {
        message: `dry run: ${booked}${move.wait.message}`,
      });
  }
}
