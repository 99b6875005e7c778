import type { StepOutcome } from './step-outcome.ts';
import { WAIT_TABLE } from './wait-table.ts';

/**
 * The safety requeue of a wait, priced by its look (DESIGN.md section 6; issue 22). A wait that an event,
 * a release or a person's write ends is looked at again only to find what no event reported: a lost event,
 * a Secret no watch selects, a write that lost its event. Such a look reads the object and what the wait is
 * about (the Secret it misses, its Jobs, its cluster, its owner Machine), so its cost differs by wait. Its
 * requeue is the table's (10 minutes plus the object's jitter) for each API read of the step that found the
 * wait, at most an hour: whatever a wait reads, its safety net costs at most one read per object per 10
 * minutes, 0.1 a minute. The price is the step's own: a step that also bookkept a Job or planned a start
 * read more than its next look will, so that look comes later; the look then prices the next. Pure.
 */

/** The most reads a requeue is stretched for. */
export const SAFETY_REQUEUE_MAX_READS = 6;

/** The longest safety requeue, seconds: an hour, the idle requeue's cap (src/core/decide.ts). */
export const SAFETY_REQUEUE_MAX_SECONDS = 3600;

/** Whether `reason` is a wait whose requeue is only a safety net (the wait table's `safetyNet`). */
export function isSafetyNetWait(reason: string): boolean {
  return Object.hasOwn(WAIT_TABLE, reason) && WAIT_TABLE[reason as keyof typeof WAIT_TABLE].safetyNet;
}

/**
 * `outcome` with its requeue stretched by `reads`, the API reads (`get`, `list`) its step sent, counted on
 * the wire (src/adapters/kube/request-count.ts): multiplied by `reads` between 1 and
 * SAFETY_REQUEUE_MAX_READS, and never past SAFETY_REQUEUE_MAX_SECONDS (nor shortened to it), when the
 * outcome's reason is a safety-net wait; any other outcome as it is.
 */
export function withSafetyRequeue(outcome: StepOutcome, reads: number): StepOutcome {
  const seconds = outcome.requeueAfterSeconds;
  if (seconds === undefined || !isSafetyNetWait(outcome.reason)) return outcome;
  const factor = Math.min(SAFETY_REQUEUE_MAX_READS, Math.max(1, Math.floor(reads)));
  if (factor === 1) return outcome;
  return {
    ...outcome,
    requeueAfterSeconds: Math.max(seconds, Math.min(SAFETY_REQUEUE_MAX_SECONDS, seconds * factor)),
  };
}

/**
 * When a safety-net wait whose table requeue is `seconds` is looked at again, for a person (`kubectl captf
 * why`): a read-only step cannot tell how many reads the controller's own step paid, so the range.
 */
export function safetyRequeueText(seconds: number): string {
  const longest = Math.min(SAFETY_REQUEUE_MAX_SECONDS, SAFETY_REQUEUE_MAX_READS * seconds);
  return `woken when what it waits for changes; otherwise looked at again in ${Math.ceil(seconds / 60)} to ${Math.ceil(longest / 60)} min, in case an event was lost (the more a look reads, the later it comes)`;
}
