import type { TargetStatus } from '../../schemas/kinds/target.ts';
import { findCondition, setCondition } from '../conditions.ts';
import { withoutState } from '../decide.ts';
import { runEvent } from '../event-spec.ts';
import { idleStatus, waitStatus } from '../move-status.ts';
import { FINALIZER } from '../preamble.ts';
import type { StepReason } from '../step-outcome.ts';
import type { Planned, StepPlan } from '../step-plan.ts';
import { waitFor } from '../wait-table.ts';
import { planRest } from './assemble.ts';
import { type Base, bare, changed, lastJob, outcome, type Planning, waitOutcome } from './context.ts';
import { planFinalize } from './finalize.ts';

/**
 * Resting steps (DESIGN.md section 6): an idle object, and the waits no Job ends: a status or a spec that
 * does not parse.
 */

/** DecideOp's `idle`: the rest, its outcome the newest run this step recorded (or `UpToDate`). */
export function planIdle(base: Base, requeueAfterSeconds: number): Planned {
  const { planning, status, bookkeeping } = base;
  const lastReason: StepReason | undefined = bookkeeping?.runs.at(-1)?.classification.reason;
  return planRest(
    base,
    idleStatus(planning.statusContext, status),
    outcome(planning, lastReason ?? 'UpToDate', {
      requeueAfterSeconds,
      bookkept: bookkeeping !== undefined,
      ...lastJob(base),
    }),
  );
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
export function planUnreadableStatus(planning: Planning, paths: readonly string[]): StepPlan {
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

/**
 * A spec that does not parse (stored before the CRD refused it, or by an older release; DESIGN.md section
 * 2). Nothing starts from it. A deleting object with nothing to destroy is still finalized (row 1 reads no
 * spec); one with state waits `SpecInvalid`, saying what an operator can do: a destroy needs the spec's
 * variables, backend and Job policy, and status records only their hash, so none is run from guesses.
 */
export function planSpecInvalid(base: Base): Planned {
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
