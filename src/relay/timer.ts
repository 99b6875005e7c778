import type { BaseLogger } from 'pino';

/**
 * The local timer (DESIGN.md section 15): POSTs `/tick` every `intervalMs`, as a PingSource does in a
 * cluster. A failed call is logged; the next interval tries again (ticks are idempotent and catch up).
 */
export interface TickTimerOptions {
  /** The `/tick` URL. */
  url: string;
  token: string | undefined;
  intervalMs: number;
  /** Per-call timeout in ms; keep it above the handlers' tick budget. */
  timeoutMs: number;
  logger: Pick<BaseLogger, 'debug' | 'warn'>;
}

/** Starts the timer; the returned function stops it and waits for a call in progress. */
export function startTickTimer(options: TickTimerOptions): () => Promise<void> {
  let inProgress: Promise<void> = Promise.resolve();
  const controller = new AbortController();
  const tick = async () => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    try {
      const response = await fetch(options.url, {
        method: 'POST',
        headers,
        body: '{}',
        signal: AbortSignal.any([controller.signal, AbortSignal.timeout(options.timeoutMs)]),
      });
      const text = await response.text();
      if (response.ok) options.logger.debug({ status: response.status }, 'tick: done');
      else options.logger.warn({ status: response.status, body: text.slice(0, 200) }, 'tick: rejected');
    } catch (error) {
      if (!controller.signal.aborted) options.logger.warn({ err: error }, 'tick: failed');
    }
  };
  const timer = setInterval(() => {
    // One call at a time: a slow tick delays the next instead of piling up.
    inProgress = inProgress.then(tick);
  }, options.intervalMs);
  return async () => {
    clearInterval(timer);
    controller.abort();
    await inProgress;
  };
}
