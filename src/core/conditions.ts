import type { Condition, ConditionStatus } from '../schemas/kinds/condition.ts';
import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { Op } from '../schemas/result.ts';
import type { Classification, RunReason } from './classify.ts';
import type { WaitDecision } from './wait-table.ts';

/**
 * Conditions (DESIGN.md sections 6 and 7) in the metav1.Condition shape. `ApplyJobSucceeded` covers apply
 * and destroy, `DriftJobSucceeded` covers drift and refresh, `DriftDetected` is the newest check's finding,
 * `Ready` sums up. Waits are `Unknown`, never `False`, and never replace a `False` (`setOpCondition`).
 * `lastTransitionTime` moves only when the status changes. Every type and reason is in a table here, in
 * src/core/classify.ts (`RUN_REASONS`) or in src/core/wait-table.ts, and docs/reference/conditions.md is
 * generated from them (`npm run gen:docs`).
 */

/** The condition types, each with its meaning. */
export const CONDITION_TYPES = {
  Ready: 'Sums up: True once provisioned, False while deleting or when the newest apply or destroy failed.',
  ApplyJobSucceeded: 'How the newest apply or destroy ended, or why the next one waits.',
  DriftJobSucceeded: 'How the newest drift check or refresh ended, or why the next one waits.',
  DriftDetected: "The newest successful drift check's finding.",
  Paused: 'Cluster API v1beta2 contract: True while pause is set (the annotation or `Cluster.spec.paused`).',
  WriteRefused:
    "True while a write of the step was refused for good (a policy, a quota, RBAC): the message names the write and the API server's answer; removed by the first step that gets through.",
} as const satisfies Record<string, string>;
export type ConditionType = keyof typeof CONDITION_TYPES;

/** The condition an op's Jobs report into. */
export const OP_CONDITION: Readonly<Record<Op, 'ApplyJobSucceeded' | 'DriftJobSucceeded'>> = {
  apply: 'ApplyJobSucceeded',
  destroy: 'ApplyJobSucceeded',
  drift: 'DriftJobSucceeded',
  refresh: 'DriftJobSucceeded',
};

/**
 * The reasons `Ready` and `DriftDetected` give of their own (`Ready` otherwise copies `ApplyJobSucceeded`),
 * each with the status and the message it is written with.
 */
export const OWN_REASONS = {
  Provisioned: { type: 'Ready', status: 'True', message: 'the infrastructure is provisioned' },
  Deleting: { type: 'Ready', status: 'False', message: 'the object is being deleted' },
  NoState: { type: 'Ready', status: 'Unknown', message: 'nothing has been applied yet' },
  DriftDetected: {
    type: 'DriftDetected',
    status: 'True',
    message: 'the infrastructure differs from the module',
  },
  NoDrift: { type: 'DriftDetected', status: 'False', message: 'the infrastructure matches the module' },
  Paused: { type: 'Paused', status: 'True', message: 'Cluster API pause is set: nothing starts' },
  NotPaused: { type: 'Paused', status: 'False', message: 'Cluster API pause is not set' },
  DriftResolved: {
    type: 'DriftDetected',
    status: 'False',
    message: 'an apply brought the infrastructure back',
  },
} as const satisfies Record<string, { type: ConditionType; status: ConditionStatus; message: string }>;
export type OwnReason = keyof typeof OWN_REASONS;

/** Every reason the controller writes into a condition. */
export type ConditionReason = RunReason | WaitReason | OwnReason;

/**
 * Waits that leave the op condition as the run before them left it (`conditionsForWait`); every other wait
 * with an op sets that op's condition `Unknown`.
 */
export const WAITS_KEEPING_OP_CONDITION: ReadonlySet<WaitReason> = new Set(['Backoff']);

/** A condition to set; the time and generation come from the write. */
export interface ConditionUpdate {
  type: ConditionType;
  status: ConditionStatus;
  reason: ConditionReason;
  message: string;
}

/** `Ready` copying `ApplyJobSucceeded` as read back from the status: its reason is whatever that one has. */
export interface ReadyCopy extends Omit<ConditionUpdate, 'type' | 'reason'> {
  type: 'Ready';
  reason: string;
}

function ownCondition(reason: OwnReason): ConditionUpdate {
  const row = OWN_REASONS[reason];
  return { type: row.type, status: row.status, reason, message: row.message };
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
  update: ConditionUpdate | ReadyCopy,
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

/** `conditions` with the v1beta2 `Paused` condition set from Cluster API's pause (DESIGN.md section 2). */
export function withPausedCondition(
  conditions: readonly Condition[],
  paused: boolean,
  at: WriteContext,
): Condition[] {
  return setCondition(conditions, ownCondition(paused ? 'Paused' : 'NotPaused'), at);
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
): ConditionUpdate | ReadyCopy {
  const apply = findCondition(conditions, 'ApplyJobSucceeded');
  if (state.deleting) return ownCondition('Deleting');
  if (apply?.status === 'False')
    return { type: 'Ready', status: 'False', reason: apply.reason, message: apply.message };
  if (state.provisioned) return ownCondition('Provisioned');
  if (apply === undefined) return ownCondition('NoState');
  return { type: 'Ready', status: 'Unknown', reason: apply.reason, message: apply.message };
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
    next = setCondition(next, ownCondition(detected ? 'DriftDetected' : 'NoDrift'), at);
  }
  if (run.success && run.op === 'apply' && findCondition(next, 'DriftDetected')?.status === 'True')
    next = setCondition(next, ownCondition('DriftResolved'), at);
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
  if (wait.op !== undefined && !WAITS_KEEPING_OP_CONDITION.has(wait.reason)) {
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
