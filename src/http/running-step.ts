import { setTimeout as sleep } from 'node:timers/promises';
import type { ObjectRef } from '../core/object-ref.ts';
import type { EventDedupe, ObjectVersion } from '../settle/ports.ts';

/**
 * An event that finds a step of its object running (DESIGN.md section 8). The watch event of a step's
 * write and the write's answer leave the API server together, so on a busy machine the event can reach a
 * handler before the writing step has marked the version as its own: judged news, it used to find the
 * step lock held, be deferred, and come back 2 s later as a step that read the object to find nothing (the
 * fleet bench: 0.9 such deferrals per object, nearly all while bookkeeping wrote). Now it waits for the
 * running step, briefly, and is judged again. The writer marks its version right after the write returns,
 * so the first looks settle an echo; news that meets a long step is deferred after the limit as before.
 * The wait is short on purpose: a source delivers one event at a time per resource (the relay, Knative's
 * ApiServerSource), so every later event of the kind waits behind this one.
 */

/** The longest an event waits for a running step of its object, in ms of the clock. */
export const RUNNING_STEP_WAIT_MS = 300;

/** The first pause before looking again, in ms; each pause doubles, up to RUNNING_STEP_POLL_MAX_MS. */
export const RUNNING_STEP_POLL_FIRST_MS = 5;

/** The longest pause between two looks, in ms. */
export const RUNNING_STEP_POLL_MAX_MS = 80;

/**
 * Waits while a step of `object` runs until `version` is marked as that step's own write, the step ends, or
 * `limitMs` has passed on `now` (ms). Answers whether a step was running (then judge the event again); false
 * at once, after one Redis EXISTS, when none was. Two EXISTS per look; throws what the port throws (Redis
 * down: the event is answered 503 and sent again).
 */
export async function awaitRunningStep(
  dedupe: Pick<EventDedupe, 'stepRunning' | 'ownWrite'>,
  object: ObjectRef,
  version: ObjectVersion,
  options: { limitMs?: number; now?: () => number; wait?: (ms: number) => Promise<unknown> } = {},
): Promise<boolean> {
  const { limitMs = RUNNING_STEP_WAIT_MS, now = () => performance.now(), wait = sleep } = options;
  if (!(await dedupe.stepRunning(object))) return false;
  const deadline = now() + limitMs;
  for (
    let pauseMs = RUNNING_STEP_POLL_FIRST_MS;
    ;
    pauseMs = Math.min(pauseMs * 2, RUNNING_STEP_POLL_MAX_MS)
  ) {
    const left = deadline - now();
    if (left <= 0) break;
    await wait(Math.min(pauseMs, left));
    if ((await dedupe.ownWrite(version)) || !(await dedupe.stepRunning(object))) break;
  }
  return true;
}
