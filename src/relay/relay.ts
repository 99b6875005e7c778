import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import type { SingleHolderLease } from '../schedule/single-holder-lease.ts';
import type { ApiServerMode } from '../schemas/cloudevents.ts';
import { buildEventMessage } from './event.ts';
import type { RelayResource } from './resources.ts';
import type { Sender } from './sender.ts';
import { runWatchLoop, type WatchSource } from './watch-loop.ts';

/**
 * The bundled relay (DESIGN.md section 15): while it holds the relay lease, it watches every resource and
 * POSTs ApiServerSource-shaped CloudEvents to `/events`. Replicas that do not hold the lease wait; one that
 * loses it stops watching at once, so at most one relay sends (duplicates would be harmless anyway).
 */
export interface RelayOptions {
  resources: readonly RelayResource[];
  source: WatchSource;
  send: Sender;
  mode: ApiServerMode;
  /** The API server URL, used as the CloudEvent `source`. */
  apiServerUrl: string;
  lease: SingleHolderLease;
  /** This replica's lease holder id. */
  holder: string;
  leaseTtlMs: number;
  logger: Pick<BaseLogger, 'debug' | 'info' | 'warn'>;
  /** Backoff of each watch loop after a failure, ms. */
  backoff: { initialMs: number; maxMs: number };
  signal: AbortSignal;
  /** Milliseconds since the epoch, for the CloudEvent `time`. */
  clock: () => number;
}

/** Runs until `signal` aborts; releases the lease on the way out. */
export async function runRelay(options: RelayOptions): Promise<void> {
  const { lease, holder, leaseTtlMs, logger, signal } = options;
  const renewEveryMs = Math.max(100, Math.floor(leaseTtlMs / 3));
  while (!signal.aborted) {
    const held = await lease.tryAcquire(holder, leaseTtlMs).catch(() => false);
    if (!held) {
      await sleep(renewEveryMs, undefined, { signal }).catch(() => undefined);
      continue;
    }
    logger.info({ holder }, 'relay: lease taken; watching');
    const active = new AbortController();
    const stop = () => active.abort();
    signal.addEventListener('abort', stop, { once: true });
    const watching = Promise.all(
      options.resources.map((resource) =>
        runWatchLoop({
          resource,
          source: options.source,
          signal: active.signal,
          logger,
          backoff: options.backoff,
          emit: async (verb, object) => {
            const message = buildEventMessage({
              mode: resource.referenceOnly === true ? 'ref' : options.mode,
              verb,
              resource,
              object,
              source: options.apiServerUrl,
              id: randomUUID(),
              time: new Date(options.clock()),
            });
            await options.send(message, active.signal);
          },
        }),
      ),
    );
    while (!active.signal.aborted) {
      await sleep(renewEveryMs, undefined, { signal: active.signal }).catch(() => undefined);
      if (active.signal.aborted) break;
      const renewed = await lease.renew(holder, leaseTtlMs).catch(() => false);
      if (!renewed) {
        logger.warn({ holder }, 'relay: lease lost; stopping');
        active.abort();
      }
    }
    await watching;
    signal.removeEventListener('abort', stop);
  }
  await lease.release(holder).catch(() => undefined);
}
