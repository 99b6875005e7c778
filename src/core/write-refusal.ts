import { createHash } from 'node:crypto';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import { findCondition, setCondition, type WriteContext } from './conditions.ts';
import { NOTE_MAX, type RunEvent, runEvent } from './event-spec.ts';
import { FINALIZER } from './preamble.ts';
import { ACCEPT_EMPTY_STATE_ANNOTATION } from './state-evidence.ts';

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
 *
 * One refusal never lifts: a create in a namespace being deleted (the API server's NamespaceLifecycle
 * admission names it with the cause `NamespaceTerminating`; a namespace never returns to Active). It is the
 * same shape with the wait `NamespaceTerminating`, looked at again only at the safety interval, and its
 * message says what a person can do: no Job can start there, so a deleting object's destroy never runs.
 */

export const WRITE_REFUSED = 'WriteRefused' as const;

/** The waits a refusal records: every refusal but one that can never lift is `WriteRefused`. */
const REFUSAL_WAITS = [WRITE_REFUSED, 'NamespaceTerminating'] as const;
export type RefusalWait = (typeof REFUSAL_WAITS)[number];

/** The `details.causes` type of a create refused because its namespace is being deleted. */
export const NAMESPACE_TERMINATING_CAUSE = 'NamespaceTerminating';

/** The wait of a refusal whose Status carried `causes` (their types). */
export function refusalWaitOf(causes: readonly string[]): RefusalWait {
  return causes.includes(NAMESPACE_TERMINATING_CAUSE) ? 'NamespaceTerminating' : WRITE_REFUSED;
}

/**
 * What the refusal's message adds for a person: for a namespace being deleted, why nothing more happens and
 * the two ways to let the object go (DESIGN.md section 5); nothing for the others, whose message is the
 * API server's answer.
 */
export function refusalAdvice(wait: RefusalWait): string {
  if (wait === WRITE_REFUSED) return '';
  return `; the namespace is being deleted and the API server creates nothing in it, so no Job of this object can start and a destroy cannot run: what its state manages stays. To let the object go, set ${ACCEPT_EMPTY_STATE_ANNOTATION}=true once its state Secret is gone (default backend; nothing is destroyed), or remove the finalizer ${FINALIZER} by hand`;
}

function isRefusalWait(reason: string | undefined): boolean {
  return REFUSAL_WAITS.some((wait) => wait === reason);
}

/**
 * A refusal as the step records it: its wait (from the Status cause types) and the message, the refused
 * write's answer followed by what a person can do about it.
 */
export function refusalOf(answer: string, causes: readonly string[]): { wait: RefusalWait; message: string } {
  const wait = refusalWaitOf(causes);
  return { wait, message: `${answer}${refusalAdvice(wait)}` };
}

/** Longest message kept in the condition: the API server's messages can be long (a policy's CEL). */
const MESSAGE_MAX = 1024;

function bounded(message: string): string {
  return message.length <= MESSAGE_MAX ? message : `${message.slice(0, MESSAGE_MAX - 1)}…`;
}

/**
 * `status` with the refusal recorded: the `WriteRefused` condition (its reason the wait) and the wait;
 * everything else kept.
 */
export function refusedStatus(
  status: TargetStatus,
  message: string,
  at: WriteContext,
  wait: RefusalWait = WRITE_REFUSED,
): TargetStatus {
  return {
    ...status,
    waitReason: wait,
    conditions: setCondition(
      status.conditions ?? [],
      { type: WRITE_REFUSED, status: 'True', reason: wait, message: bounded(message) },
      at,
    ),
  };
}

/** Whether `status` records a refusal. */
export function recordsRefusal(status: TargetStatus): boolean {
  return findCondition(status.conditions, WRITE_REFUSED) !== undefined || isRefusalWait(status.waitReason);
}

/**
 * The message of the refusal a status records (its `WriteRefused` condition, True), for `kubectl captf why`:
 * a read-only plan never performs the write the API server refuses, so only the record says what it answered.
 */
export function recordedRefusal(
  conditions: readonly { type?: string; status?: string; message?: string }[] | undefined,
): string | undefined {
  return conditions?.find((c) => c.type === WRITE_REFUSED && c.status === 'True')?.message;
}

/** `status` without a recorded refusal (a step got through): the condition and the wait go. */
export function withoutRefusal(status: TargetStatus): TargetStatus {
  if (!recordsRefusal(status)) return status;
  const next: TargetStatus = {
    ...status,
    conditions: (status.conditions ?? []).filter((c) => c.type !== WRITE_REFUSED),
  };
  if (isRefusalWait(next.waitReason)) delete next.waitReason;
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
