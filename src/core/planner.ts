import { retryStatesOf } from './attempts.ts';
import {
  blockMoveChange,
  blockMoveWanted,
  carriesBlockMove,
  DELETE_FOR_MOVE_ANNOTATION,
} from './block-move.ts';
import { jobsToBookkeep } from './bookkeeping.ts';
import { findCondition } from './conditions.ts';
import { decideOp } from './decide.ts';
import { idleWithoutJobs, keptWithoutJobs } from './jobs-read.ts';
import { baseOf, bookkeepingOf } from './planner/bookkeep.ts';
import { keptClusterOperationWait } from './planner/cluster-operation.ts';
import { type Base, planningOf } from './planner/context.ts';
import { planFinalize } from './planner/finalize.ts';
import { planPreamble } from './planner/preamble.ts';
import { beforeStateRead } from './planner/previous-attempt.ts';
import { planStart } from './planner/start.ts';
import { planIdle, planSpecInvalid, planUnreadableStatus } from './planner/waits.ts';
import { planDeadlineEnforced, planWatchDecision, type Watched, watchOf } from './planner/watch.ts';
import { checkedStateSecret, stateMayHoldResources, successRecorded } from './state-evidence.ts';
import type { PlanFacts, Planned } from './step-plan.ts';

/**
 * The planner of one reconcile step (DESIGN.md sections 3 to 7): one pure function from the snapshot and the
 * clock to the whole plan of the step: which finished Jobs to record and how each is classified, the
 * TerraformPlans to create or supersede, the spec contract fields, the one next status, the Events, the
 * Jobs to prune and the pods to release, the move (watch, start, wait, finalize) and the outcome.
 * src/step/perform.ts carries it out in the crash-safe write order; a dry run describes it
 * (src/core/describe-plan.ts). Nothing here reads the clock, the environment or the network.
 *
 * The planner runs in phases: the Jobs, the pods, the Job slot usage, a watched Job's per-run Secret, the
 * state Secret, a lock holder's pod and a member's cluster lease are read only when the plan needs them.
 * Called without one it needs, it answers `{ kind: 'read', read }`; the shell reads it and calls again
 * with the fact added. A no-op step therefore costs its two reads and nothing more.
 *
 * This file dispatches; each phase of DESIGN.md section 5 is planned in src/core/planner/: the preamble
 * (preamble.ts), bookkeeping (bookkeep.ts), the watch of a running Job (watch.ts), the start and its gates
 * (start.ts), the finalizer (finalize.ts), the rests and waits (waits.ts); every plan is assembled by
 * assemble.ts from the parts context.ts shares.
 */

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
  const planning = planningOf(facts);
  const pre = planPreamble(planning);
  if (pre !== undefined) return pre;
  if (snap.statusUnreadable) return planUnreadableStatus(planning, snap.statusUnreadable);

  const finished = jobsToBookkeep(snap);
  const active = snap.records.find((r) => !r.finished && !r.bookkept);
  // Bookkeeping reads pods; so does watching a Job (trouble starting it, its deadline, adoption).
  if ((finished.length > 0 || active !== undefined) && facts.pods === undefined)
    return { kind: 'read', read: 'pods' };
  const watched = active === undefined ? undefined : watchOf(planning, active);
  if (watched?.kind === 'read') return watched;
  const enforced = watched?.verdict.kind === 'delete' && watched.verdict.reason === 'JobDeadlineExceeded';
  const base = baseOf(planning, bookkeepingOf(planning, finished, enforced ? active : undefined));
  if (enforced && watched && active) return planDeadlineEnforced(base, watched, active);
  return decide(base, watched);
}

/** DecideOp (section 3) on the status as this step's bookkeeping leaves it, then the move. */
function decide(base: Base, watched: Watched | undefined): Planned {
  const { planning, status, records } = base;
  const { snap, facts } = planning;
  if (snap.jobsUnread && !snap.spec) return { kind: 'read', read: 'jobs' };
  if (!snap.spec) return planSpecInvalid(base);
  const spec = snap.spec;
  const retries = retryStatesOf(records, status.attempts);
  // Row 1 reads the state of a deleting object that records no success at all: a state holding resources
  // overrides a status lost in a restore, and one holding nothing lets go an object whose applies all
  // failed. After a recorded destroy, what is left is kept and reported (StateKept), never destroyed again.
  const noSuccessRecorded = !successRecorded(status);
  const decision = decideOp({
    ...(facts.state !== undefined && noSuccessRecorded
      ? { stateMayHoldResources: stateMayHoldResources(facts.state, snap, status) }
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
    // status holds, or the wait the status records, found again unchanged (a member's cluster operation
    // wait from the lease itself); anything else lists the Jobs.
    if (decision.kind === 'start') {
      const planned = planStart(base, decision, retries[decision.op]);
      return (
        keptWithoutJobs(planned) ??
        keptClusterOperationWait(base, planned, decision.op) ?? { kind: 'read', read: 'jobs' }
      );
    }
    if (decision.kind !== 'idle' || !idleWithoutJobs(status)) return { kind: 'read', read: 'jobs' };
  }
  // The state is read before a destroy that may not be needed (row 1), never before the Jobs are known, and
  // only once no pod of an earlier attempt lives (src/core/planner/previous-attempt.ts).
  if (
    decision.kind === 'start' &&
    decision.op === 'destroy' &&
    noSuccessRecorded &&
    facts.state === undefined &&
    checkedStateSecret(snap) !== undefined
  )
    return beforeStateRead(base) ?? { kind: 'read', read: 'state' };
  switch (decision.kind) {
    case 'watch':
      return planWatchDecision(base, decision.job, watched);
    case 'finalize':
      return planFinalize(base, decision.reason);
    case 'idle':
      return planIdle(base, decision.requeueAfterSeconds);
    case 'start':
      return planStart(base, decision, retries[decision.op]);
  }
}
