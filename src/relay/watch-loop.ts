import { setTimeout as sleep } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import type { ApiServerVerb } from '../schemas/cloudevents.ts';
import type { KubeObject } from './event.ts';
import type { RelayResource } from './resources.ts';

/**
 * A list+watch loop for one resource that loses nothing across watch drops and 410 Gone (notes
 * SERVERLESS-FACTS section 3.5): a drop resumes from the last resourceVersion seen; 410 (or no version yet)
 * relists, and a relist emits `update` for every object it sees and `delete` for every object that vanished,
 * unlike ApiServerSource, whose relist is silent (section 1.3).
 */

/** How a watch ended. */
export type WatchEnd =
  | { kind: 'gone' } // 410: resourceVersion too old; relist
  | { kind: 'closed' } // server or timeout closed a healthy watch; resume
  | { kind: 'failed'; error: unknown }; // transport or HTTP error; resume after backoff

/** One watch notification as the API server sends it. */
export interface WatchNotification {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject;
}

/** The API server, as the loop needs it (./kube-source.ts implements it with client-node). */
export interface WatchSource {
  list(resource: RelayResource): Promise<{ items: KubeObject[]; resourceVersion: string }>;
  /**
   * Watches from `resourceVersion`; `onEvent` is called in order and awaited before the next; resolves when
   * the watch ends (or `signal` aborts, as `closed`).
   */
  watch(
    resource: RelayResource,
    resourceVersion: string,
    onEvent: (notification: WatchNotification) => Promise<void>,
    signal: AbortSignal,
  ): Promise<WatchEnd>;
}

export interface WatchLoopOptions {
  resource: RelayResource;
  source: WatchSource;
  /** Delivers one event; must not throw (the sender logs and drops). */
  emit: (verb: ApiServerVerb, object: KubeObject) => Promise<void>;
  signal: AbortSignal;
  logger: Pick<BaseLogger, 'debug' | 'info' | 'warn'>;
  /** Backoff after a failed list or watch, ms: doubles from `initialMs` up to `maxMs`. */
  backoff: { initialMs: number; maxMs: number };
}

/** What the loop did, for tests and logs. */
export interface WatchLoopStats {
  lists: number;
  watches: number;
  gone: number;
}

/** Whether a list failed with HTTP 429 (client-node's ApiException `code`). */
function tooManyRequests(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 429;
}

/** Runs until `signal` aborts. */
export async function runWatchLoop(options: WatchLoopOptions): Promise<WatchLoopStats> {
  const { resource, source, signal, logger } = options;
  const known = new Map<string, KubeObject>();
  const stats: WatchLoopStats = { lists: 0, watches: 0, gone: 0 };
  let resourceVersion: string | undefined;
  let failures = 0;
  const backoff = async () => {
    const delayMs = Math.min(options.backoff.maxMs, options.backoff.initialMs * 2 ** Math.min(failures, 16));
    failures++;
    await sleep(delayMs, undefined, { signal }).catch(() => undefined);
  };

  while (!signal.aborted) {
    if (resourceVersion === undefined) {
      try {
        const list = await source.list(resource);
        stats.lists++;
        resourceVersion = list.resourceVersion;
        await relist(list.items, known, options.emit);
        failures = 0;
      } catch (error) {
        const context = { err: error, kind: resource.kind, namespace: resource.namespace };
        // The API server answers 429 while a resource's storage initialises (a CRD just installed, a
        // restart): expected once, so only a second failure in a row is a warning.
        if (failures === 0 && tooManyRequests(error))
          logger.info(context, 'relay list: the API server is not ready for it yet (429); retrying');
        else logger.warn(context, 'relay list: failed; retrying');
        await backoff();
        continue;
      }
    }
    stats.watches++;
    const end = await source.watch(
      resource,
      resourceVersion,
      async (n) => {
        if (n.type === 'BOOKMARK' || n.type === 'ERROR') {
          if (n.type === 'BOOKMARK') resourceVersion = versionOf(n.object) ?? resourceVersion;
          return;
        }
        const key = keyOf(n.object);
        if (n.type === 'DELETED') known.delete(key);
        else known.set(key, n.object);
        resourceVersion = versionOf(n.object) ?? resourceVersion;
        await options.emit(
          n.type === 'ADDED' ? 'add' : n.type === 'MODIFIED' ? 'update' : 'delete',
          n.object,
        );
      },
      signal,
    );
    if (end.kind === 'gone') {
      stats.gone++;
      logger.info({ kind: resource.kind, namespace: resource.namespace }, 'relay watch: 410 Gone; relisting');
      resourceVersion = undefined;
    } else if (end.kind === 'failed') {
      logger.warn(
        { err: end.error, kind: resource.kind, namespace: resource.namespace },
        'relay watch: failed; resuming',
      );
      await backoff();
    } else {
      failures = 0;
    }
  }
  return stats;
}

/** Emits `update` for everything listed (`add` for objects never seen) and `delete` for what vanished. */
async function relist(
  items: KubeObject[],
  known: Map<string, KubeObject>,
  emit: WatchLoopOptions['emit'],
): Promise<void> {
  const seen = new Set<string>();
  for (const item of items) {
    const key = keyOf(item);
    seen.add(key);
    const verb: ApiServerVerb = known.has(key) ? 'update' : 'add';
    known.set(key, item);
    await emit(verb, item);
  }
  for (const [key, object] of known) {
    if (seen.has(key)) continue;
    known.delete(key);
    await emit('delete', object);
  }
}

function keyOf(object: KubeObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

function versionOf(object: KubeObject): string | undefined {
  const rv = object.metadata?.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}
