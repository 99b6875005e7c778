import { conditionsForWait, readyUpdate, setCondition } from '../core/conditions.ts';
import type { WaitDecision } from '../core/gates.ts';
import type { StepContext } from './context.ts';
import type { TargetStatus } from './snapshot.ts';

/**
 * The status of an object with nothing running (DESIGN.md section 6): a wait shows `waitReason`,
 * `nextAttemptAt` and an `Unknown` condition (never `False`); an idle object shows neither.
 */

function state(context: StepContext, status: TargetStatus): { provisioned: boolean; deleting: boolean } {
  return {
    provisioned: status.ready === true,
    deleting: context.snap.object.metadata.deletionTimestamp !== undefined,
  };
}

/** `status` with the wait recorded. */
export function waitStatus(context: StepContext, status: TargetStatus, wait: WaitDecision): TargetStatus {
  const at = { now: context.now, generation: context.snap.generation };
  const next: TargetStatus = {
    ...status,
    waitReason: wait.reason,
    nextAttemptAt: wait.nextAttemptAt.toISOString(),
    conditions: conditionsForWait(
      status.conditions ?? [],
      { ...wait, message: context.redact(wait.message) },
      state(context, status),
      at,
    ),
  };
  delete next.activeJob;
  return next;
}

/** `status` of an object that is up to date until its next schedule. */
export function idleStatus(context: StepContext, status: TargetStatus): TargetStatus {
  const at = { now: context.now, generation: context.snap.generation };
  const conditions = status.conditions ?? [];
  const next: TargetStatus = {
    ...status,
    conditions: setCondition(conditions, readyUpdate(conditions, state(context, status)), at),
  };
  delete next.waitReason;
  delete next.nextAttemptAt;
  delete next.activeJob;
  return next;
}
