import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { Op } from '../schemas/result.ts';
import { conditionsForWait, OP_CONDITION, readyUpdate, setCondition, setOpCondition } from './conditions.ts';
import type { Redactor } from './redaction.ts';
import type { WaitDecision } from './wait-table.ts';

/**
 * The status a step's move leaves (DESIGN.md sections 2 and 6): a wait shows `waitReason` (and
 * `nextAttemptAt` only for a wait with a natural end) and an `Unknown` condition (never over a counted
 * failure's `False`); an idle object shows
 * neither; a running Job shows `activeJob`. Each is a pure function of the status it starts from and the
 * object, never of the clock beyond the condition transition time, so the step that its own write wakes
 * computes the same status again and writes nothing.
 */

/** What every status of a step is written against. */
export interface StatusContext {
  now: Date;
  generation: number;
  deleting: boolean;
  redactor: Redactor;
}

function readyState(
  context: StatusContext,
  status: TargetStatus,
): { provisioned: boolean; deleting: boolean } {
  return { provisioned: status.ready === true, deleting: context.deleting };
}

/** `status` with the wait recorded. */
export function waitStatus(context: StatusContext, status: TargetStatus, wait: WaitDecision): TargetStatus {
  const at = { now: context.now, generation: context.generation };
  const next: TargetStatus = {
    ...status,
    observedGeneration: context.generation,
    waitReason: wait.reason,
    conditions: conditionsForWait(
      status.conditions ?? [],
      { ...wait, message: context.redactor.redact(wait.message) },
      readyState(context, status),
      at,
    ),
  };
  if (wait.nextAttemptAt) next.nextAttemptAt = wait.nextAttemptAt.toISOString();
  else delete next.nextAttemptAt;
  delete next.activeJob;
  return next;
}

/** `status` of an object that is up to date until its next schedule. */
export function idleStatus(context: StatusContext, status: TargetStatus): TargetStatus {
  const at = { now: context.now, generation: context.generation };
  const conditions = status.conditions ?? [];
  const next: TargetStatus = {
    ...status,
    observedGeneration: context.generation,
    conditions: setCondition(conditions, readyUpdate(conditions, readyState(context, status)), at),
  };
  delete next.waitReason;
  delete next.nextAttemptAt;
  delete next.activeJob;
  return next;
}

/** The Job that runs, as `status.activeJob` shows it. */
export interface ActiveJob {
  name: string;
  op: Op;
  attempt: number;
  startedAt: string;
}

/**
 * The status of an object whose Job runs: `activeJob`, the op's condition `Unknown` with the watch reason
 * (a counted failure keeps it `False`: the retry shows here, not in the condition), `waitReason`
 * `JobActive` (or the trouble starting a container), no `nextAttemptAt`.
 */
export function activeStatus(
  context: StatusContext,
  status: TargetStatus,
  active: ActiveJob,
  reason: Extract<WaitReason, 'JobActive' | 'ImagePullBackOff' | 'CreateContainerConfigError'>,
  message: string,
): TargetStatus {
  const at = { now: context.now, generation: context.generation };
  let conditions = setOpCondition(
    status.conditions ?? [],
    { type: OP_CONDITION[active.op], status: 'Unknown', reason, message: context.redactor.redact(message) },
    at,
  );
  conditions = setCondition(conditions, readyUpdate(conditions, readyState(context, status)), at);
  const next: TargetStatus = {
    ...status,
    activeJob: active,
    waitReason: reason,
    conditions,
    observedGeneration: context.generation,
  };
  delete next.nextAttemptAt;
  return next;
}
