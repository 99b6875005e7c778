/**
 * The relay's send retry policy: retry what a handler answers for a transient failure (429, 503, any 5xx,
 * 404/413/425 like Knative's sdk-go, notes SERVERLESS-FACTS section 1.2) and transport errors, with
 * exponential backoff honouring `Retry-After`; anything else is final. Pure.
 */

/** The result of one send attempt. */
export type Attempt = { kind: 'status'; status: number; retryAfterSeconds?: number } | { kind: 'transport' };

export type RetryDecision =
  | { retry: false; reason: 'Delivered' | 'Rejected' | 'AttemptsExhausted' }
  | { retry: true; delayMs: number; reason: 'Transient' };

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** 8 attempts over about 25 s: longer than Knative's 3 s, because a relay drop waits for the sweep. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 8, baseDelayMs: 200, maxDelayMs: 10_000 };

const RETRIED_4XX = new Set([404, 408, 413, 425, 429]);

/** Decides after attempt number `attempt` (1-based). */
export function decideRetry(attempt: Attempt, attemptNumber: number, policy: RetryPolicy): RetryDecision {
  if (attempt.kind === 'status' && attempt.status >= 200 && attempt.status < 300) {
    return { retry: false, reason: 'Delivered' };
  }
  const transient = attempt.kind === 'transport' || attempt.status >= 500 || RETRIED_4XX.has(attempt.status);
  if (!transient) return { retry: false, reason: 'Rejected' };
  if (attemptNumber >= policy.maxAttempts) return { retry: false, reason: 'AttemptsExhausted' };
  const backoffMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attemptNumber - 1));
  const askedMs =
    attempt.kind === 'status' && attempt.retryAfterSeconds !== undefined
      ? attempt.retryAfterSeconds * 1000
      : 0;
  return {
    retry: true,
    delayMs: Math.min(policy.maxDelayMs, Math.max(backoffMs, askedMs)),
    reason: 'Transient',
  };
}
