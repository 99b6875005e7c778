import { setTimeout as sleep } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import type { RelayMessage } from './event.ts';
import { type Attempt, decideRetry, type RetryPolicy } from './retry.ts';

/**
 * POSTs relay messages to `/events` with retries (./retry.ts). A message that cannot be delivered is logged
 * and dropped: the sweep heals it (DESIGN.md section 8), as it does for Knative's own drops.
 */
export interface SenderOptions {
  /** The `/events` URL. */
  url: string;
  /** Bearer token of the handlers; undefined when their auth is disabled. */
  token: string | undefined;
  policy: RetryPolicy;
  /** Per-attempt timeout in ms. */
  timeoutMs: number;
  logger: Pick<BaseLogger, 'debug' | 'warn'>;
}

/** The final result of one message. */
export type SendResult =
  | { delivered: true; attempts: number }
  | { delivered: false; attempts: number; reason: string };

export type Sender = (message: RelayMessage, signal?: AbortSignal) => Promise<SendResult>;

export function createSender(options: SenderOptions): Sender {
  return async (message, signal) => {
    const headers = { ...message.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    for (let attemptNumber = 1; ; attemptNumber++) {
      const attempt = await post(options, headers, message.body, signal);
      const decision = decideRetry(attempt, attemptNumber, options.policy);
      if (!decision.retry) {
        if (decision.reason === 'Delivered') return { delivered: true, attempts: attemptNumber };
        const reason = `${decision.reason} (${attempt.kind === 'status' ? `HTTP ${attempt.status}` : 'transport error'})`;
        options.logger.warn(
          { ceType: message.headers['ce-type'], ceName: message.headers['ce-name'], reason },
          'relay send: dropped',
        );
        return { delivered: false, attempts: attemptNumber, reason };
      }
      if (signal?.aborted) return { delivered: false, attempts: attemptNumber, reason: 'Aborted' };
      await sleep(decision.delayMs, undefined, { signal }).catch(() => undefined);
    }
  };
}

async function post(
  options: SenderOptions,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal | undefined,
): Promise<Attempt> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await fetch(options.url, {
      method: 'POST',
      headers,
      body,
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    await response.arrayBuffer().catch(() => undefined);
    const retryAfter = Number(response.headers.get('retry-after'));
    return Number.isFinite(retryAfter) && retryAfter > 0
      ? { kind: 'status', status: response.status, retryAfterSeconds: retryAfter }
      : { kind: 'status', status: response.status };
  } catch (error) {
    options.logger.debug({ err: error }, 'relay send: transport error');
    return { kind: 'transport' };
  }
}
