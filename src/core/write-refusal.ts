import { createHash } from 'node:crypto';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import { findCondition, setCondition, type WriteContext } from './conditions.ts';
import { NOTE_MAX, type RunEvent, runEvent } from './event-spec.ts';

/**
 * A refused write (issue 23 item 9; DESIGN.md section 5): whatever a step writes — the object's status,
 * spec or metadata, a TerraformPlan, a Job, its bookkept mark, a per-run Secret, a runner identity, a pod
 * finalizer, a delete — the API server may refuse for good: a ValidatingAdmissionPolicy, a webhook, a
 * ResourceQuota, RBAC, a terminating namespace, a schema. Such a refusal never freezes the object in
 * silence: it ends the step as one shape, the condition `WriteRefused` (True, naming the verb, kind and name
 * of the refused write and the API server's message, redacted) with `status.waitReason: WriteRefused`, and
 * the step is retried every 60 s (`WriteRefused` in src/core/step-outcome.ts). The first later step that
 * gets through without a refusal removes both: the object converges once the refusal is lifted, and
 * nothing it did before the refusal is lost (every write is idempotent and the next step plans it again).
 * Conflicts (read again) and outages (retry, 503) are not refusals.
 */

export const WRITE_REFUSED = 'WriteRefused' as const;

/** Longest message kept in the condition: the API server's messages can be long (a policy's CEL). */
const MESSAGE_MAX = 1024;

function bounded(message: string): string {
  return message.length <= MESSAGE_MAX ? message : `${message.slice(0, MESSAGE_MAX - 1)}…`;
}

/** `status` with the refusal recorded: the `WriteRefused` condition and wait; everything else kept. */
export function refusedStatus(status: TargetStatus, message: string, at: WriteContext): TargetStatus {
  return {
    ...status,
    waitReason: WRITE_REFUSED,
    conditions: setCondition(
      status.conditions ?? [],
      { type: WRITE_REFUSED, status: 'True', reason: WRITE_REFUSED, message: bounded(message) },
      at,
    ),
  };
}

/** Whether `status` records a refusal. */
export function recordsRefusal(status: TargetStatus): boolean {
  return findCondition(status.conditions, WRITE_REFUSED) !== undefined || status.waitReason === WRITE_REFUSED;
}

/** `status` without a recorded refusal (a step got through): the condition and the wait go. */
export function withoutRefusal(status: TargetStatus): TargetStatus {
  if (!recordsRefusal(status)) return status;
  const next: TargetStatus = {
    ...status,
    conditions: (status.conditions ?? []).filter((c) => c.type !== WRITE_REFUSED),
  };
  if (next.waitReason === WRITE_REFUSED) delete next.waitReason;
  return next;
}

/**
 * The Warning Event of a refusal, once per distinct message (its name derives from the message): the one
 * trace left when the status write itself is refused.
 */
export function refusalEvent(message: string): RunEvent {
  const key = createHash('sha256').update(message).digest('hex').slice(0, 16);
  return runEvent('WriteRefused', {
    action: 'Write',
    note: message.length <= NOTE_MAX ? message : `${message.slice(0, NOTE_MAX - 1)}…`,
    transitionKey: key,
  });
}
