import type { StepContext } from './context.ts';
import type { ObjectRef, StepAction, StepOutcome } from './contract.ts';

/**
 * Builds step outcomes (src/step/contract.ts). Every message passes the step's redactor (C15), so no
 * text that leaves the step can carry a referenced Secret's value.
 */

/** Seconds before an `unavailable` step is retried (the HTTP layer answers 503 with this Retry-After). */
export const UNAVAILABLE_RETRY_SECONDS = 5;

export function outcomeOf(
  context: Pick<StepContext, 'redact'> & { snap: { ref: ObjectRef } },
  action: StepAction,
  reason: string,
  requeueAfterSeconds: number | undefined,
  extras: { message?: string; job?: string } = {},
): StepOutcome {
  return {
    ref: context.snap.ref,
    action,
    reason,
    ...(requeueAfterSeconds !== undefined
      ? { requeueAfterSeconds: Math.max(0, Math.ceil(requeueAfterSeconds)) }
      : {}),
    ...(extras.message !== undefined ? { message: context.redact(extras.message) } : {}),
    ...(extras.job !== undefined ? { job: extras.job } : {}),
  };
}

/** Redis or the API server did not answer: nothing more was changed; try again shortly. */
export function unavailable(context: Parameters<typeof outcomeOf>[0], message: string): StepOutcome {
  return outcomeOf(context, 'unavailable', 'Unavailable', UNAVAILABLE_RETRY_SECONDS, { message });
}
