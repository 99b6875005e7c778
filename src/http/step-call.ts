import type { FastifyBaseLogger } from 'fastify';
import type { RequeueSchedule } from '../schedule/ports.ts';
import type { ObjectRef, ReconcileStep, StepOptions, StepOutcome } from '../step/contract.ts';
import type { InFlight } from './in-flight.ts';
import { resolveOutcome } from './outcome.ts';

/**
 * One step on behalf of one HTTP request (`/events`, `/reconcile`): run it (tracked for shutdown), log the
 * outcome, schedule its requeue (not for a dry run, which must not act), and hand back what to answer.
 */
export interface StepAnswer {
  status: 200 | 202 | 503;
  retryAfterSeconds?: number;
  outcome: StepOutcome;
}

export interface StepCallDeps {
  step: ReconcileStep;
  schedule: RequeueSchedule;
  inFlight: InFlight;
  clock: () => number;
}

/** Runs the step; throws UnavailableError when the requeue cannot be scheduled (answered 503). */
export async function callStep(
  deps: StepCallDeps,
  log: FastifyBaseLogger,
  ref: ObjectRef,
  options: StepOptions = {},
): Promise<StepAnswer> {
  return deps.inFlight.track(async () => {
    const outcome = await deps.step(ref, options);
    const resolved = resolveOutcome(outcome, deps.clock());
    log[resolved.log.level]({ ...resolved.log.fields, dryRun: options.dryRun === true }, resolved.log.msg);
    if (resolved.requeue !== undefined && options.dryRun !== true) {
      await deps.schedule.add(resolved.requeue.ref, resolved.requeue.dueAtMs);
    }
    return resolved.retryAfterSeconds === undefined
      ? { status: resolved.status, outcome }
      : { status: resolved.status, retryAfterSeconds: resolved.retryAfterSeconds, outcome };
  });
}
