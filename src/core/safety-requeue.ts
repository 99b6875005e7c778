import type { StepOutcome } from './step-outcome.ts';
import { WAIT_TABLE } from './wait-table.ts';

/**
 * The safety requeue of a wait, priced by its look (DESIGN.md section 6; issue 22). A wait that an event,
 * a release or a person's write ends is looked at again only to find what no event reported: a lost event,
 * a Secret no watch selects, a state Secret restored. Such a look reads the object and what the wait is
 * about (the Secret it misses, its Jobs, its cluster, its owner Machine), so its cost differs by wait. Its
 * requeue is the table's (10 minutes plus the object's jitter) for each API read the step that found the
 * wait paid: whatever a wait reads, its safety net costs at most one read per object per 10 minutes, 0.1 a
 * minute. An hour at most, the idle requeue's cap. Pure.
 */

/** The most reads a requeue is stretched for: 6 × 600 s, an hour. */
export const SAFETY_REQUEUE_MAX_READS = 6;

/** Whether `reason` is a wait whose requeue is only a safety net (the wait table's `safetyNet`). */
function isSafetyNetWait(reason: string): boolean {
  return Object.hasOwn(WAIT_TABLE, reason) && WAIT_TABLE[reason as keyof typeof WAIT_TABLE].safetyNet;
}

/**
 * `outcome` with its requeue stretched by `reads`, the API reads (`get`, `list`) its step sent, counted on
 * the wire (src/adapters/kube/request-count.ts): multiplied by `reads` between 1 and
 * SAFETY_REQUEUE_MAX_READS when the outcome's reason is a safety-net wait; any other outcome as it is.
 */
export function withSafetyRequeue(outcome: StepOutcome, reads: number): StepOutcome {
  if (outcome.requeueAfterSeconds === undefined || !isSafetyNetWait(outcome.reason)) return outcome;
  const factor = Math.min(SAFETY_REQUEUE_MAX_READS, Math.max(1, Math.floor(reads)));
  return { ...outcome, requeueAfterSeconds: outcome.requeueAfterSeconds * factor };
}
