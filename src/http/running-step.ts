import { setTimeout as sleep } from 'node:timers/promises';
import type { ObjectRef } from '../core/object-ref.ts';
import type { EventDedupe, ObjectVersion } from '../settle/ports.ts';

/**
 * An event that finds a step of its object running (DESIGN.md section 8). The watch event of a step's
 * write and the write's answer leave the API server together, so on a busy machine the event can reach a
 * handler before the writing step has marked the version as its own: judged news, it used to find the
 * step lock held, be deferred, and come back 2 s later as a step that read the object to find nothing (the
 * fleet bench: 0.9 such deferrals per object, nearly all while bookkeeping wrote). Now it waits for the
 * running step, briefly, and is judged again: the mark or the step's end is there by then.
 */

/** The longest an event waits for a running step of its object, in ms: most steps end well within it. */
export const RUNNING_STEP_WAIT_MS = 1_000;

/** How often a waiting event looks again, in ms. */
export const RUNNING_STEP_POLL_MS = 50;

/**
 * Waits while a step of `object` runs until `version` is marked as that step's own write, the step ends,
 * or `limitMs` passes. Answers whether a step was running (then judge the event again); false at once, after
 * one Redis EXISTS, when none was. Two EXISTS per look; throws what the port throws (Redis down).
 */
export async function awaitRunningStep(
  dedupe: Pick<EventDedupe, 'stepRunning' | 'ownWrite'>,
  object: ObjectRef,
  version: ObjectVersion,
  options: { limitMs?: number; pollMs?: number; wait?: (ms: number) => Promise<unknown> } = {},
): Promise<boolean> {
  const { limitMs = RUNNING_STEP_WAIT_MS, pollMs = RUNNING_STEP_POLL_MS, wait = sleep } = options;
  if (!(await dedupe.stepRunning(object))) return false;
  for (let waited = 0; waited < limitMs; waited += pollMs) {
    await wait(pollMs);
    if ((await dedupe.ownWrite(version)) || !(await dedupe.stepRunning(object))) break;
  }
  return true;
}
