import type { Condition, ConditionStatus } from '../schemas/kinds/condition.ts';
import type { Op } from '../schemas/result.ts';
import type { Classification } from './classify.ts';
import type { WaitDecision } from './wait-table.ts';

/**
 * Conditions (DESIGN.md sections 6 and 7) in the metav1.Condition shape. `ApplyJobSucceeded` covers apply
 * and destroy, `DriftJobSucceeded` covers drift and refresh, `DriftDetected` is the newest check's finding,
 * `Ready` sums up. Waits are `Unknown`, never `False`, and never replace a `False` (`setOpCondition`).
 * `lastTransitionTime` moves only when the status changes.
 */

export const CONDITION_TYPES = ['Ready', 'ApplyJobSucceeded', 'DriftJobSucceeded', 'DriftDetected'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

/** The condition an op's Jobs report into. */
export const OP_CONDITION: Readonly<Record<Op, 'ApplyJobSucceeded' | 'DriftJobSucceeded'>> = {
  apply: 'ApplyJobSucceeded',
  destroy: 'ApplyJobSucceeded',
  drift: 'DriftJobSucceeded',
  refresh: 'DriftJobSucceeded',
};

/** A condition to set; the time and generation come from the write. */
export interface ConditionUpdate {
  type: ConditionType;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/** When and for which generation conditions are written. */
export interface WriteContext {
  now: Date;
  generation: number;
}

/**
 * Sets one condition: replaces the entry of its type (keeping `lastTransitionTime` when the status is the
 * same) or appends it. Returns a new list; the input is not changed.
 */
export function setCondition(
  conditions: readonly Condition[],
  update: ConditionUpdate,
  at: WriteContext,
): Condition[] {
  const existing = conditions.find((c) => c.type === update.type);
  const next: Condition = {
    ...update,
    observedGeneration: at.generation,
    lastTransitionTime:
      existing && existing.status === update.status ? existing.lastTransitionTime : at.now.toISOString(),
  };
  return existing ? conditions.map((c) => (c.type === update.type ? next : c)) : [...conditions, next];
}

/**
 * Sets an op's condition (`ApplyJobSucceeded`, `DriftJobSucceeded`) from a run, a wait or a running Job. An
 * `Unknown` never replaces a `False`: a counted failure stays `False` with its reason until a run of that op
 * succeeds or fails again, so the Failing Jobs runbook's query (`status == "False"`) keeps finding the object
 * while its retry waits or runs; the retry shows in `activeJob` and `waitReason` instead (issue 15).
 */
export function setOpCondition(
  conditions: readonly Condition[],
  update: ConditionUpdate,
  at: WriteContext,
): Condition[] {
  if (update.status === 'Unknown' && findCondition(conditions, update.type)?.status === 'False')
    return [...conditions];
  return setCondition(conditions, update, at);
}

/** The condition of a type, if set. */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * `Ready`: False while deleting or when the newest apply/destroy failed; True once provisioned; Unknown
 * before (with the reason of the apply condition, e.g. a wait).
 */
export function readyUpdate(
  conditions: readonly Condition[],
  state: { provisioned: boolean; deleting: boolean },
): ConditionUpdate {
  const apply = findCondition(conditions, 'ApplyJobSucceeded');
  if (state.deleting)
    return { type: 'Ready', status: 'False', reason: 'Deleting', message: 'the object is being deleted' };
  if (apply?.status === 'False')
    return { type: 'Ready', status: 'False', reason: apply.reason, message: apply.message };
  if (state.provisioned) {
    return {
      type: 'Ready',
      status: 'True',
      reason: 'Provisioned',
      message: 'the infrastructure is provisioned',
    };
  }
  return {
    type: 'Ready',
    status: 'Unknown',
    reason: apply?.reason ?? 'NoState',
    message: apply?.message ?? 'nothing has been applied yet',
  };
}

function runMessage(run: Classification): string {
  const summary = run.error?.summary;
  return summary ? `${run.op} ${run.result}: ${summary}` : `${run.op} ${run.result}`;
}

/**
 * Conditions after bookkeeping one run (DESIGN.md section 7): the op's condition from the classification;
 * a drift check sets `DriftDetected` from its finding (changes are a successful check, never a failure); a
 * successful apply resolves drift. Then `Ready`.
 */
export function conditionsAfterRun(
  conditions: readonly Condition[],
  run: Classification,
  state: { provisioned: boolean; deleting: boolean },
  at: WriteContext,
): Condition[] {
  let next = setOpCondition(
    conditions,
    { type: OP_CONDITION[run.op], status: run.conditionStatus, reason: run.reason, message: runMessage(run) },
    at,
  );
  if (run.success && run.op === 'drift') {
    const detected = run.runnerResult?.drift?.detected === true;
    next = setCondition(
      next,
      detected
        ? {
            type: 'DriftDetected',
            status: 'True',
            reason: 'DriftDetected',
            message: 'the infrastructure differs from the module',
          }
        : {
            type: 'DriftDetected',
            status: 'False',
            reason: 'NoDrift',
            message: 'the infrastructure matches the module',
          },
      at,
    );
  }
  if (run.success && run.op === 'apply' && findCondition(next, 'DriftDetected')?.status === 'True') {
    next = setCondition(
      next,
      {
        type: 'DriftDetected',
        status: 'False',
        reason: 'DriftResolved',
        message: 'an apply brought the infrastructure back',
      },
      at,
    );
  }
  return setCondition(next, readyUpdate(next, state), at);
}

/**
 * Conditions while a start waits (DESIGN.md section 6): the waiting op's condition becomes `Unknown` with
 * the wait reason unless a counted failure holds it `False` (`setOpCondition`), and a wait without an op
 * changes nothing but `Ready`.
 *
 * A `Backoff` wait leaves the op condition as the run before it left it: a backoff exists only because a
 * run failed, so `ApplyJobSucceeded` stays `False` with the failure's reason and summary, and `Ready` stays
 * `False` with it; turning it into `Unknown/Backoff` would hide why the object is broken and flap
 * False → Unknown → False (one Event each) on every retry. The wait itself is explained by
 * `status.waitReason: Backoff` and `status.nextAttemptAt`.
 */
export function conditionsForWait(
  conditions: readonly Condition[],
  wait: WaitDecision,
  state: { provisioned: boolean; deleting: boolean },
  at: WriteContext,
): Condition[] {
  let next = [...conditions];
  if (wait.op !== undefined && wait.reason !== 'Backoff') {
    next = setOpCondition(
      next,
      { type: OP_CONDITION[wait.op], status: 'Unknown', reason: wait.reason, message: wait.message },
      at,
    );
  }
  return setCondition(next, readyUpdate(next, state), at);
}

/** Types whose status changed between two lists: the transitions that deserve one Event each. */
export function conditionTransitions(before: readonly Condition[], after: readonly Condition[]): Condition[] {
  return after.filter((c) => findCondition(before, c.type)?.status !== c.status);
}
