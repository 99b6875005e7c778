import type { ObjectRef } from '../core/object-ref.ts';
import type { StepAction, StepOutcome } from '../core/step-outcome.ts';

/**
 * What a step's outcome means for its caller (STYLE.md habit 6; controller-runtime's single result
 * handler): the HTTP status, the requeue to schedule and the log line, as a pure function. src/settle/
 * settle.ts applies it for every caller (`/events`, `/reconcile`, `/tick`, the sweep).
 */

/** Log levels used for step outcomes. */
export type OutcomeLogLevel = 'info' | 'warn' | 'debug';

interface ActionRow {
  /** HTTP status answered for a single-step call. */
  status: 200 | 202 | 503;
  level: OutcomeLogLevel;
  /** Whether the outcome's requeueAfterSeconds goes into the schedule. */
  schedulesRequeue: boolean;
}

/**
 * Action → status/log/requeue. `unavailable` answers 503 with Retry-After and schedules nothing: Redis may be
 * the thing that is down, the sender retries, and the sweep heals a dropped event (DESIGN.md sections 8, 13).
 */
const ACTION_TABLE: Readonly<Record<StepAction, ActionRow>> = {
  created: { status: 200, level: 'info', schedulesRequeue: true },
  bookkept: { status: 200, level: 'info', schedulesRequeue: true },
  watching: { status: 200, level: 'debug', schedulesRequeue: true },
  waiting: { status: 200, level: 'info', schedulesRequeue: true },
  finalized: { status: 200, level: 'info', schedulesRequeue: true },
  none: { status: 200, level: 'debug', schedulesRequeue: true },
  deferred: { status: 202, level: 'debug', schedulesRequeue: true },
  gone: { status: 200, level: 'debug', schedulesRequeue: false },
  unavailable: { status: 503, level: 'warn', schedulesRequeue: false },
};

/** Retry-After for an `unavailable` outcome that named no delay, in seconds. */
export const DEFAULT_UNAVAILABLE_RETRY_SECONDS = 5;

/** What the shell does with one outcome. */
export interface ResolvedOutcome {
  status: 200 | 202 | 503;
  /** Set only for 503. */
  retryAfterSeconds?: number;
  /** The requeue to schedule, due at `nowMs + afterSeconds * 1000`; undefined when none. */
  requeue?: { ref: ObjectRef; dueAtMs: number };
  /**
   * For a caller that holds a schedule claim (`/tick`, the sweep): when the member is due again. Equals the
   * requeue, or after an `unavailable` outcome the Retry-After (the claim is Redis's, so it may still land).
   */
  claimNextDueAtMs?: number;
  log: { level: OutcomeLogLevel; msg: string; fields: Record<string, string | number | boolean> };
}

/** Maps an outcome to status, requeue and log line; pure, `nowMs` is the caller's clock. */
export function resolveOutcome(outcome: StepOutcome, nowMs: number): ResolvedOutcome {
  const row = ACTION_TABLE[outcome.action];
  const { ref } = outcome;
  const fields: Record<string, string | number | boolean> = {
    kind: ref.kind,
    namespace: ref.namespace,
    name: ref.name,
    action: outcome.action,
    reason: outcome.reason,
  };
  if (outcome.job !== undefined) fields.job = outcome.job;
  // The version the step left: with the event's own (`eventResourceVersion`), what tells an echo from news.
  if (outcome.observed !== undefined) fields.resourceVersion = outcome.observed.resourceVersion;
  if (outcome.requeueAfterSeconds !== undefined) fields.requeueAfterSeconds = outcome.requeueAfterSeconds;
  const msg = `step ${outcome.action}: ${outcome.reason}${outcome.message === undefined ? '' : ` (${outcome.message})`}`;
  const resolved: ResolvedOutcome = { status: row.status, log: { level: row.level, msg, fields } };
  if (row.status === 503) {
    resolved.retryAfterSeconds = Math.max(
      1,
      Math.ceil(outcome.requeueAfterSeconds ?? DEFAULT_UNAVAILABLE_RETRY_SECONDS),
    );
  }
  if (row.schedulesRequeue && outcome.requeueAfterSeconds !== undefined) {
    resolved.requeue = { ref, dueAtMs: nowMs + Math.max(0, outcome.requeueAfterSeconds) * 1000 };
  }
  const claimNext =
    resolved.requeue?.dueAtMs ??
    (resolved.retryAfterSeconds === undefined ? undefined : nowMs + resolved.retryAfterSeconds * 1000);
  if (claimNext !== undefined) resolved.claimNextDueAtMs = claimNext;
  return resolved;
}
