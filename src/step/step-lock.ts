import { STEP_LOCK_TTL_MS } from '../adapters/redis/adapter.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import type { StepRedis } from './deps.ts';

/**
 * Keeps the step lock (DESIGN.md section 5 step 1: `SET NX PX`, 30 s) while a step runs. A step cannot be
 * bounded below the TTL by counting: every API call may take its full 10 s timeout, and even a no-op step
 * makes two; bookkeeping one Job makes seven or more (status, Events, mark, Secret, pruning), and a step may
 * bookkeep several Jobs and then start one. So the lock is extended every third of its TTL for as long as
 * the step runs, whatever it does, and a step that finds it lost starts nothing more (another step may
 * hold the object now). Redis is never the only guard: writes carry resourceVersion preconditions, Job names
 * are deterministic and the API guard checks pods (section 5 steps 7-8).
 */

/** How often a running step extends its lock: a third of the TTL, so two extensions may fail in a row. */
export const STEP_LOCK_EXTEND_EVERY_MS = STEP_LOCK_TTL_MS / 3;

/** A step lock held for a running step. */
export interface KeptStepLock {
  /** True once an extension found the lock taken over or expired; an unanswered extension is not a loss. */
  lost(): boolean;
  /** Stops extending (waits for an extension in flight); the caller then releases the lock. */
  stop(): Promise<void>;
}

/** Extends the lock `token` holds on `ref` every `everyMs` until stopped. */
export function keepStepLock(
  redis: Pick<StepRedis, 'extendStepLock'>,
  ref: ObjectRef,
  token: string,
  everyMs: number = STEP_LOCK_EXTEND_EVERY_MS,
): KeptStepLock {
  let lost = false;
  let inFlight: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    inFlight = redis.extendStepLock(ref, token).then(
      (answer) => {
        if (answer.kind === 'lost') lost = true;
      },
      // Unanswered, like `unknown`: the next extension tries again, and the TTL covers two misses.
      () => undefined,
    );
  }, everyMs);
  // A kept lock never holds the process open: a stopping server finishes its steps, then exits.
  timer.unref();
  return {
    lost: () => lost,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
