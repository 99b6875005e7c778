import type { DestinationStream } from 'pino';
import type { ObjectRef } from '../../src/core/object-ref.ts';
import { type AppDeps, NO_NEWEST } from '../../src/http/deps.ts';
import { createLogger } from '../../src/http/logger.ts';
import { createMetrics } from '../../src/metrics/registry.ts';
import type { EventDedupe, ObjectVersion, RequeueSchedule } from '../../src/settle/ports.ts';
import { NO_DEPENDENTS } from '../../src/settle/ports.ts';
import { createSettle } from '../../src/settle/settle.ts';
import type { ReconcileStep } from '../../src/step/contract.ts';

/**
 * In-memory dependencies of `buildApp` for the HTTP benches: a step that answers one fixed outcome, and
 * ports whose state stays bounded, so a memory figure measures the handler and not the bench's stand-ins
 * (test/unit/http/in-memory.ts records every call and log line, which is right for tests and wrong here).
 * The logger runs at the production default level (`info`) into a stream that drops the lines, so the
 * cost of writing logs is counted without printing them.
 */

export const BENCH_TOKEN = 'bench-token-0123456789abcdef0123456789abcdef';
/** Dedupe markers kept; production keeps them in Redis, so the handler's own memory must not grow. */
const DEDUPE_CAPACITY = 1024;

/** Drops every log line after pino has formatted it. */
const discard: DestinationStream = { write: () => undefined };

/** Event dedupe that forgets the oldest marker beyond DEDUPE_CAPACITY. */
class BoundedDedupe implements EventDedupe {
  readonly #keys = new Set<string>();

  async seen(event: ObjectVersion): Promise<boolean> {
    return this.#keys.has(`${event.uid}@${event.resourceVersion}`);
  }

  async remember(event: ObjectVersion): Promise<void> {
    this.#keys.add(`${event.uid}@${event.resourceVersion}`);
    if (this.#keys.size <= DEDUPE_CAPACITY) return;
    const oldest = this.#keys.values().next();
    if (!oldest.done) this.#keys.delete(oldest.value);
  }

  /** The bench's steps write nothing of their objects: no version is a step's own. */
  async ownWrite(): Promise<boolean> {
    return false;
  }

  /** The bench's handlers take no step lock that an event could wait for. */
  async stepRunning(): Promise<boolean> {
    return false;
  }
}

/**
 * The version read of a reference-mode event: a new resourceVersion on every read, so each bench event is
 * a change that reaches the step (as a live object being edited, its content too), never a dedupe hit.
 */
function changingVersions(): AppDeps['versions'] {
  let resourceVersion = 0;
  return {
    versionOf: async (ref) => {
      resourceVersion += 1;
      return {
        uid: `uid-${ref.name}`,
        resourceVersion: String(resourceVersion),
        digest: String(resourceVersion),
      };
    },
  };
}

/** The earliest due time per object, as the Redis schedule keeps it. */
class MemorySchedule implements RequeueSchedule {
  readonly #due = new Map<string, number>();

  async add(ref: ObjectRef, dueAtMs: number): Promise<void> {
    const key = `${ref.kind}/${ref.namespace}/${ref.name}`;
    const old = this.#due.get(key);
    if (old === undefined || dueAtMs < old) this.#due.set(key, dueAtMs);
  }

  async ensure(ref: ObjectRef, dueAtMs: number): Promise<void> {
    const key = `${ref.kind}/${ref.namespace}/${ref.name}`;
    if (!this.#due.has(key)) this.#due.set(key, dueAtMs);
  }

  async claimDue(): Promise<[]> {
    return [];
  }

  async complete(): Promise<void> {}
}

/** The step every bench request reaches: nothing to do, look again in 10 minutes. */
const upToDate: ReconcileStep = async (ref) => ({
  ref,
  action: 'none',
  reason: 'UpToDate',
  requeueAfterSeconds: 600,
});

/** Fresh dependencies for one app: bearer auth with BENCH_TOKEN, the production body limit (1 MiB). */
export function benchAppDeps(): AppDeps {
  const schedule = new MemorySchedule();
  const dedupe = new BoundedDedupe();
  const metrics = createMetrics(
    {
      jobTotals: async () => [],
      jobsActive: async () => 0,
      lastSuccesses: async () => [],
      objects: async () => [],
      sizes: async () => [],
    },
    () => undefined,
  );
  return {
    config: {
      auth: { mode: 'bearer', token: BENCH_TOKEN },
      bodyLimitBytes: 1_048_576,
      tickBudgetMs: 10_000,
      tickConcurrency: 4,
      tickBatch: 50,
      watchNamespaces: [],
    },
    logger: createLogger('info', discard),
    settle: createSettle({
      step: upToDate,
      schedule,
      dedupe,
      dependents: NO_DEPENDENTS,
      metrics,
      clock: Date.now,
    }),
    schedule,
    dedupe,
    versions: changingVersions(),
    newest: NO_NEWEST,
    owners: { resolve: async () => ({ found: false, reason: 'ObjectGone' }) },
    clusterMembers: { toWake: async () => ({ found: false, reason: 'ObjectGone' }) },
    dependents: NO_DEPENDENTS,
    readiness: async () => ({ redis: { ok: true }, apiServer: { ok: true } }),
    metrics,
    sweep: async () => ({ state: 'skipped', reason: 'NotDueOrHeldElsewhere' }),
    clock: Date.now,
  };
}
