import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { compareResourceVersions, type SeenObject } from '../../../src/core/event-relevance.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { HeldPod } from '../../../src/core/pod-release.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import type { WakeSource } from '../../../src/core/wake.ts';
import { buildApp } from '../../../src/http/app.ts';
import type {
  AppConfig,
  AppDeps,
  ClusterMembers,
  ClusterWake,
  NamedCluster,
  NewestObjects,
  ObjectVersions,
  OwnedObject,
  OwnerLookup,
  OwnerResolver,
  WatchedObject,
} from '../../../src/http/deps.ts';
import { createLogger } from '../../../src/http/logger.ts';
import type { FleetMetricsReader } from '../../../src/metrics/fleet.ts';
import { createMetrics } from '../../../src/metrics/registry.ts';
import type { SweepReport } from '../../../src/schedule/sweep.ts';
import type {
  Claim,
  DependentsPort,
  EventDedupe,
  ObjectVersion,
  RequeueSchedule,
} from '../../../src/settle/ports.ts';
import { createSettle } from '../../../src/settle/settle.ts';
import type { ReconcileStep, StepOptions } from '../../../src/step/contract.ts';

/**
 * In-memory implementations of the HTTP layer's injected ports, for test/unit/http only (STYLE.md habit 9:
 * a fresh app per test through `app.inject`). Integration tests use the real Redis and API server.
 */

export const T0 = Date.parse('2026-11-29T12:00:00Z');
export const TOKEN = 'test-token-0123456789abcdef0123456789abcdef';

const keyOf = (ref: ObjectRef) => `${ref.kind}/${ref.namespace}/${ref.name}`;

/** A sorted-set-like schedule keeping the earliest due time, with claims hidden until completed. */
export class MemorySchedule implements RequeueSchedule {
  readonly due = new Map<string, { ref: ObjectRef; dueAtMs: number }>();
  readonly claimed = new Map<string, ObjectRef>();

  async add(ref: ObjectRef, dueAtMs: number): Promise<void> {
    const old = this.due.get(keyOf(ref));
    if (old === undefined || dueAtMs < old.dueAtMs) this.due.set(keyOf(ref), { ref, dueAtMs });
  }
  async ensure(ref: ObjectRef, dueAtMs: number): Promise<void> {
    if (!this.due.has(keyOf(ref)) && !this.claimed.has(keyOf(ref)))
      this.due.set(keyOf(ref), { ref, dueAtMs });
  }
  async claimDue(nowMs: number, limit: number): Promise<Claim[]> {
    const ready = [...this.due.values()]
      .filter((e) => e.dueAtMs <= nowMs)
      .sort((a, b) => a.dueAtMs - b.dueAtMs);
    return ready.slice(0, limit).map((e) => {
      this.due.delete(keyOf(e.ref));
      this.claimed.set(keyOf(e.ref), e.ref);
      return { ref: e.ref, token: String(e.dueAtMs) };
    });
  }
  async complete(claim: Claim, nextDueAtMs: number | undefined): Promise<void> {
    this.claimed.delete(keyOf(claim.ref));
    if (nextDueAtMs !== undefined) await this.add(claim.ref, nextDueAtMs);
  }
  dueAt(ref: ObjectRef): number | undefined {
    return this.due.get(keyOf(ref))?.dueAtMs;
  }
}

export class MemoryDedupe implements EventDedupe {
  readonly keys = new Set<string>();
  /** Versions a step wrote (`uid@resourceVersion`). */
  readonly own = new Set<string>();
  async seen(event: ObjectVersion): Promise<boolean> {
    return this.keys.has(`${event.uid}@${event.resourceVersion}`);
  }
  async remember(event: ObjectVersion): Promise<void> {
    this.keys.add(`${event.uid}@${event.resourceVersion}`);
  }
  async ownWrite(event: ObjectVersion): Promise<boolean> {
    return this.own.has(`${event.uid}@${event.resourceVersion}`);
  }
  /** Objects a step runs for (`kind/namespace/name`): their step lock is held. */
  readonly running = new Set<string>();
  async stepRunning(object: ObjectRef): Promise<boolean> {
    return this.running.has(`${object.kind}/${object.namespace}/${object.name}`);
  }
}

/** Dependencies in memory: who waits for whom. */
function sourceKey(source: WakeSource): string {
  return `${source.kind}/${source.namespace}/${source.name}`;
}

export class MemoryDependents implements DependentsPort {
  readonly waiting = new Map<string, ObjectRef[]>();
  async add(on: WakeSource, member: ObjectRef): Promise<void> {
    const list = this.waiting.get(sourceKey(on)) ?? [];
    if (!list.some((m) => keyOf(m) === keyOf(member))) list.push(member);
    this.waiting.set(sourceKey(on), list);
  }
  async take(on: WakeSource, limit?: number): Promise<ObjectRef[]> {
    const list = this.waiting.get(sourceKey(on)) ?? [];
    const taken = list.splice(0, limit ?? list.length);
    if (list.length === 0) this.waiting.delete(sourceKey(on));
    return taken;
  }
}

/**
 * Versions of our objects: `uid-<name>@1` unless set in `versions`; `'gone'` answers no object. Counts the
 * reads (each is one GET in production).
 */
export class MemoryVersions implements ObjectVersions {
  readonly versions = new Map<string, ObjectVersion | 'gone'>();
  readonly reads: ObjectRef[] = [];
  async versionOf(ref: ObjectRef): Promise<SeenObject | undefined> {
    this.reads.push(ref);
    const set = this.versions.get(keyOf(ref));
    if (set === 'gone') return undefined;
    const version = set ?? { uid: `uid-${ref.name}`, resourceVersion: '1' };
    // The content follows the version: every new version here is a change.
    return { ...version, digest: `content-${version.resourceVersion}` };
  }
}

/** The newest handled version per object, kept only when newer (as the Redis script does). */
export class MemoryNewest implements NewestObjects {
  readonly seen = new Map<string, SeenObject>();
  async newest(ref: WatchedObject): Promise<SeenObject | undefined> {
    return this.seen.get(`${ref.kind}/${ref.namespace}/${ref.name}`);
  }
  async remember(ref: WatchedObject, seen: SeenObject): Promise<void> {
    const current = this.seen.get(`${ref.kind}/${ref.namespace}/${ref.name}`);
    const order =
      current === undefined || current.uid !== seen.uid
        ? 1
        : (compareResourceVersions(seen.resourceVersion, current.resourceVersion) ?? 1);
    if (order > 0 || (order === 0 && current?.digest === ''))
      this.seen.set(`${ref.kind}/${ref.namespace}/${ref.name}`, seen);
  }
}

/** Owner lookups answered from a table of `Kind/namespace/name`. */
export class MemoryOwners implements OwnerResolver {
  readonly owners = new Map<string, ObjectRef>();
  /** Pods the live read finds being deleted with our finalizer, by `namespace/name`. */
  readonly heldPods = new Map<string, HeldPod>();
  readonly calls: OwnedObject[] = [];
  async resolve(owned: OwnedObject): Promise<OwnerLookup> {
    this.calls.push(owned);
    const ref = this.owners.get(`${owned.kind}/${owned.namespace}/${owned.name}`);
    const heldPod = owned.kind === 'Pod' ? this.heldPods.get(`${owned.namespace}/${owned.name}`) : undefined;
    if (ref === undefined) return { found: false, reason: 'ObjectGone' };
    return heldPod === undefined ? { found: true, ref } : { found: true, ref, heldPod };
  }
}

/** Cluster wake-ups answered from a table of `namespace/name` (absent: the Cluster is gone). */
export class MemoryClusterMembers implements ClusterMembers {
  readonly members = new Map<string, ObjectRef[]>();
  readonly calls: NamedCluster[] = [];
  async toWake(cluster: NamedCluster): Promise<ClusterWake> {
    this.calls.push(cluster);
    const refs = this.members.get(`${cluster.namespace}/${cluster.name}`);
    return refs === undefined ? { found: false, reason: 'ObjectGone' } : { found: true, refs };
  }
}

/** A step that records its calls and answers from a function of the ref. */
export function recordingStep(
  answer: (ref: ObjectRef, options?: StepOptions) => Partial<StepOutcome> = () => ({}),
) {
  const calls: Array<{ ref: ObjectRef; options: StepOptions | undefined }> = [];
  const step: ReconcileStep = async (ref, options) => {
    calls.push({ ref, options });
    return { ref, action: 'none', reason: 'UpToDate', requeueAfterSeconds: 600, ...answer(ref, options) };
  };
  return { step, calls };
}

/** Settles steps over in-memory ports, as the composition root does over Redis. */
export function memorySettle(
  step: ReconcileStep,
  schedule: RequeueSchedule,
  dedupe: EventDedupe = new MemoryDedupe(),
) {
  return createSettle({
    step,
    schedule,
    dedupe,
    dependents: new MemoryDependents(),
    metrics: createMetrics(emptyFleet, () => undefined),
    clock: () => T0,
  });
}

/** Collects pino lines as parsed objects. */
export function logSink() {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { stream, lines, raw };
}

export const emptyFleet: FleetMetricsReader = {
  jobTotals: async () => [],
  jobsActive: async () => 0,
  lastSuccesses: async () => [],
  objects: async () => [],
  sizes: async () => [],
};

export interface TestApp {
  app: FastifyInstance;
  deps: AppDeps;
  schedule: MemorySchedule;
  dedupe: MemoryDedupe;
  versions: MemoryVersions;
  owners: MemoryOwners;
  clusterMembers: MemoryClusterMembers;
  calls: ReturnType<typeof recordingStep>['calls'];
  dependents: MemoryDependents;
  logs: ReturnType<typeof logSink>;
  sweeps: number[];
}

/** A fresh app over in-memory ports; `overrides` replaces any dependency. */
export function testApp(
  overrides: Partial<Omit<AppDeps, 'config' | 'settle'>> & {
    config?: Partial<AppConfig>;
    answer?: Parameters<typeof recordingStep>[0];
    /** The step under the app's settle (a recording step by default). */
    step?: ReconcileStep;
  } = {},
): TestApp {
  const schedule = (overrides.schedule as MemorySchedule | undefined) ?? new MemorySchedule();
  const dedupe = (overrides.dedupe as MemoryDedupe | undefined) ?? new MemoryDedupe();
  const versions = new MemoryVersions();
  const newest = new MemoryNewest();
  const owners = new MemoryOwners();
  const clusterMembers = new MemoryClusterMembers();
  const recording = recordingStep(overrides.answer);
  const { calls } = recording;
  const logs = logSink();
  const sweeps: number[] = [];
  const { config: configOverride, answer: _answer, step: stepOverride, ...rest } = overrides;
  const metrics = rest.metrics ?? createMetrics(emptyFleet, () => undefined);
  const clock = rest.clock ?? (() => T0);
  const dependents = new MemoryDependents();
  const settle = createSettle({
    step: stepOverride ?? recording.step,
    schedule: rest.schedule ?? schedule,
    dedupe: rest.dedupe ?? dedupe,
    dependents,
    newest: rest.newest ?? newest,
    metrics,
    clock,
  });
  const deps: AppDeps = {
    config: {
      auth: { mode: 'bearer', token: TOKEN },
      bodyLimitBytes: 64 * 1024,
      tickBudgetMs: 10_000,
      tickConcurrency: 4,
      tickBatch: 50,
      watchNamespaces: [],
      ...configOverride,
    },
    logger: createLogger('debug', logs.stream),
    settle,
    schedule,
    dedupe,
    versions,
    newest,
    owners,
    clusterMembers,
    dependents,
    readiness: async () => ({ redis: { ok: true }, apiServer: { ok: true } }),
    metrics,
    sweep: async (nowMs): Promise<SweepReport> => {
      sweeps.push(nowMs);
      return { state: 'skipped', reason: 'NotDueOrHeldElsewhere' };
    },
    ...rest,
    clock,
  };
  return {
    app: buildApp(deps),
    deps,
    schedule,
    dedupe,
    versions,
    owners,
    clusterMembers,
    calls,
    dependents,
    logs,
    sweeps,
  };
}

export const auth = { authorization: `Bearer ${TOKEN}` };

/** Binary-mode ApiServerSource headers (what the Knative adapter sends). */
export function binaryHeaders(type: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...auth,
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': crypto.randomUUID(),
    'ce-source': 'https://10.96.0.1:443',
    'ce-type': type,
    ...extra,
  };
}

/** A structured-mode body for the same event. */
export function structuredBody(type: string, data: unknown): string {
  return JSON.stringify({
    specversion: '1.0',
    id: crypto.randomUUID(),
    source: 'https://10.96.0.1:443',
    type,
    datacontenttype: 'application/json',
    data,
  });
}
