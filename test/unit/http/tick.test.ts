import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { SingleHolderLease } from '../../../src/schedule/single-holder-lease.ts';
import {
  objectsNeedingBookkeeping,
  runSweepIfDue,
  type SweepListers,
  type SweepPods,
  type SweptJob,
  type SweptObject,
  type SweptPod,
} from '../../../src/schedule/sweep.ts';
import { auth, MemorySchedule, memorySettle, recordingStep, T0, testApp } from './in-memory.ts';

const c = (name: string): ObjectRef => ({ kind: 'TerraformCluster', namespace: 'team-a', name });
/** `name` listed at resourceVersion `rv`. */
const listed = (name: string, rv = '1'): SweptObject => ({
  ref: c(name),
  version: { uid: `uid-${name}`, resourceVersion: rv },
});
/** Every version has been stepped. */
const allSeen = { seen: async () => true };

describe('POST /tick', () => {
  it('claims due requeues, runs their steps, and schedules each next requeue from its outcome', async () => {
    const t = testApp({
      answer: (ref) =>
        ref.name === 'busy'
          ? { action: 'watching', reason: 'JobActive', requeueAfterSeconds: 60 }
          : { action: 'none', reason: 'UpToDate', requeueAfterSeconds: 600 },
    });
    await t.schedule.add(c('busy'), T0 - 1000);
    await t.schedule.add(c('idle'), T0 - 500);
    await t.schedule.add(c('later'), T0 + 5000);
    const response = await t.app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      claimed: 2,
      completed: 2,
      handedBack: 0,
      failed: 0,
      byAction: { watching: 1, none: 1 },
    });
    expect(t.calls.map((call) => call.ref.name)).toEqual(['busy', 'idle']);
    expect(t.schedule.dueAt(c('busy'))).toBe(T0 + 60_000);
    expect(t.schedule.dueAt(c('idle'))).toBe(T0 + 600_000);
    expect(t.schedule.dueAt(c('later'))).toBe(T0 + 5000);
    expect(t.schedule.claimed.size).toBe(0);
    expect(t.sweeps).toEqual([T0]);
  });

  it('runs at most `concurrency` steps at once', async () => {
    let running = 0;
    let peak = 0;
    const t = testApp({
      config: { tickConcurrency: 3 },
      step: async (ref) => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        return { ref, action: 'none', reason: 'UpToDate', requeueAfterSeconds: 600 };
      },
    });
    for (let i = 0; i < 10; i++) await t.schedule.add(c(`o${i}`), T0 - i);
    const response = await t.app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(response.json().completed).toBe(10);
    expect(peak).toBe(3);
  });

  it('hands back claims whose step did not start within the budget; they are due again at once', async () => {
    let now = T0;
    const t = testApp({
      config: { tickBudgetMs: 1000, tickConcurrency: 1 },
      clock: () => now,
      step: async (ref) => {
        now += 600;
        return { ref, action: 'none', reason: 'UpToDate', requeueAfterSeconds: 600 };
      },
    });
    for (const name of ['a', 'b', 'c', 'd']) await t.schedule.add(c(name), T0 - 1);
    const response = await t.app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(response.json()).toMatchObject({ claimed: 4, completed: 2, handedBack: 2 });
    expect(t.schedule.dueAt(c('c'))).toBe(T0);
    expect(t.schedule.dueAt(c('d'))).toBe(T0);
  });

  it('an unavailable outcome keeps the member due after its Retry-After; a throwing step (bug) after 60 s', async () => {
    const t = testApp({
      step: async (ref) => {
        if (ref.name === 'bug') throw new TypeError('boom');
        return { ref, action: 'unavailable', reason: 'Unavailable', requeueAfterSeconds: 4 };
      },
    });
    await t.schedule.add(c('down'), T0 - 1);
    await t.schedule.add(c('bug'), T0 - 1);
    const response = await t.app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ completed: 1, failed: 1 });
    expect(t.schedule.dueAt(c('down'))).toBe(T0 + 4000);
    expect(t.schedule.dueAt(c('bug'))).toBe(T0 + 60_000);
  });

  it('a schedule outage answers 503 with Retry-After (the PingSource retries), never 500', async () => {
    const { UnavailableError } = await import('../../../src/http/errors.ts');
    const t = testApp();
    t.deps.schedule.claimDue = async () => {
      throw new UnavailableError('redis', 'Connection is closed.');
    };
    const response = await t.app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
  });

  it.each([
    { id: 'T01', name: 'empty body', payload: '', status: 200 },
    { id: 'T02', name: 'PingSource JSON data', payload: '{"source":"ping"}', status: 200 },
    { id: 'T03', name: 'non-JSON body', payload: 'tick!', status: 400 },
    { id: 'T04', name: 'a JSON array', payload: '[1]', status: 400 },
  ])('$id $name → $status', async ({ payload, status }) => {
    const t = testApp();
    const response = await t.app.inject({
      method: 'POST',
      url: '/tick',
      headers: { ...auth, 'content-type': 'application/json' },
      payload,
    });
    expect(response.statusCode).toBe(status);
  });
});

describe('sweep', () => {
  const job = (name: string, owner: string, finished: boolean, bookkept: boolean): SweptJob => ({
    namespace: 'team-a',
    name,
    owner: c(owner),
    finished,
    bookkept,
  });

  it('selects each live object with a finished, un-bookkept Job once', () => {
    const jobs = [
      job('j1', 'a', true, false),
      job('j2', 'a', true, false),
      job('j3', 'b', true, true),
      job('j4', 'c', false, false),
      job('j5', 'gone', true, false),
    ];
    expect(objectsNeedingBookkeeping([c('a'), c('b'), c('c')], jobs)).toEqual([c('a')]);
  });

  function lease(held: boolean): SingleHolderLease & { released: number } {
    return {
      released: 0,
      tryAcquire: async () => !held,
      renew: async () => !held,
      async release() {
        this.released++;
      },
    };
  }

  function listers(over: Partial<SweepListers> = {}): SweepListers {
    return {
      listObjects: async () => [listed('a'), listed('b')],
      listJobs: async () => [job('j1', 'a', true, false), job('old', 'a', true, true)],
      ...over,
    };
  }

  const silent = {
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
  };

  it('with the lease: reconciles the objects with an un-bookkept Job and gives every object a requeue', async () => {
    const schedule = new MemorySchedule();
    const { step, calls } = recordingStep(() => ({
      action: 'bookkept',
      reason: 'ApplySucceeded',
      requeueAfterSeconds: 30,
    }));
    const report = await runSweepIfDue({
      lease: lease(false),
      holder: 'i1',
      listers: listers(),
      settle: memorySettle(step, schedule),
      schedule,
      dedupe: allSeen,
      clock: () => T0,
      logger: silent,
      periodMs: 600_000,
      concurrency: 2,
    });
    expect(report).toEqual({
      state: 'ran',
      reason: 'SyncPeriodElapsed',
      objects: 2,
      jobs: 2,
      reconciled: 1,
      requeued: 2,
      changed: 0,
      stepFailures: 0,
    });
    expect(calls.map((call) => call.ref)).toEqual([c('a')]);
    expect(schedule.dueAt(c('a'))).toBe(T0 + 30_000);
    expect(schedule.dueAt(c('b'))).toBe(T0 + 600_000);
  });

  it('an object at a version no step has seen (its event was lost) is due now; a resting one keeps its requeue', async () => {
    const schedule = new MemorySchedule();
    await schedule.add(c('resting'), T0 + 3_600_000);
    await schedule.add(c('changed'), T0 + 3_600_000);
    const report = await runSweepIfDue({
      lease: lease(false),
      holder: 'i1',
      listers: listers({
        listObjects: async () => [listed('resting', '7'), listed('changed', '9'), { ref: c('unversioned') }],
        listJobs: async () => [],
      }),
      settle: memorySettle(recordingStep().step, schedule),
      schedule,
      dedupe: { seen: async (version) => version.resourceVersion !== '9' },
      clock: () => T0,
      logger: silent,
      periodMs: 600_000,
      concurrency: 2,
    });
    expect(report).toMatchObject({ state: 'ran', objects: 3, changed: 1, requeued: 3 });
    expect(schedule.dueAt(c('changed'))).toBe(T0);
    expect(schedule.dueAt(c('resting'))).toBe(T0 + 3_600_000);
    expect(schedule.dueAt(c('unversioned'))).toBe(T0 + 600_000);
  });

  /** One sweep with the lease, over `pods` and `sweptListers`; what it reported, warned and scheduled. */
  async function sweepWithPods(pods: SweepPods, sweptListers: SweepListers = listers()) {
    const schedule = new MemorySchedule();
    const warnings: string[] = [];
    const report = await runSweepIfDue({
      lease: lease(false),
      holder: 'i1',
      listers: sweptListers,
      pods,
      settle: memorySettle(recordingStep().step, schedule),
      schedule,
      dedupe: allSeen,
      clock: () => T0,
      logger: { ...silent, warn: (_fields: unknown, msg?: string) => void warnings.push(msg ?? '') },
      periodMs: 600_000,
      concurrency: 2,
    });
    return { report, warnings, schedule };
  }

  it('a refused pod release is logged and skipped: the other releases and every requeue still happen', async () => {
    const released: string[] = [];
    const heldBy = (name: string): SweptPod => ({
      namespace: 'ns',
      name,
      view: {
        metadata: {
          name,
          finalizers: ['captf.io/result'],
          ownerReferences: [{ kind: 'Job', name: 'gone', uid: 'uid-gone' }],
          deletionTimestamp: '2026-11-29T12:05:00Z',
        },
      },
    });
    const { report, warnings, schedule } = await sweepWithPods({
      listPods: async () => [heldBy('refused'), heldBy('p2')],
      releasePod: async (pod) => {
        if (pod.name === 'refused') throw new Error('patch pods: Forbidden');
        released.push(pod.name);
      },
      deletePod: async () => {
        throw new Error('no pod here is orphaned');
      },
    });
    expect(report).toMatchObject({ state: 'ran', podsReleased: 1, podsDeleted: 0, requeued: 2 });
    expect(released).toEqual(['p2']);
    expect(warnings).toContain('sweep: release pod finalizer: failed');
    expect(schedule.dueAt(c('b'))).toBe(T0 + 600_000);
  });

  it('orphaned pods that ended or never started are deleted (a refused one is logged); a running one, the owned ones and those of a listed Job stay', async () => {
    const deleted: string[] = [];
    const ownedBy = [{ kind: 'Job', name: 'j', uid: 'uid-j', controller: true }];
    const pod = (
      name: string,
      phase: string,
      fields: { node?: string; owned?: boolean; deleting?: boolean; jobUid?: string } = {},
    ): SweptPod => ({
      namespace: 'ns',
      name,
      view: {
        metadata: {
          name,
          uid: `uid-${name}`,
          resourceVersion: '7',
          labels: {
            'captf.io/managed': 'true',
            'captf.io/owner-uid': 'uid-object',
            'batch.kubernetes.io/controller-uid': fields.jobUid ?? 'uid-gone',
          },
          ...(fields.owned ? { ownerReferences: ownedBy } : {}),
          ...(fields.deleting ? { deletionTimestamp: '2026-11-29T12:05:00Z' } : {}),
        },
        ...(fields.node ? { spec: { nodeName: fields.node } } : {}),
        status: { phase },
      },
    });
    const { report, warnings } = await sweepWithPods(
      {
        listPods: async () => [
          pod('ended', 'Succeeded', { node: 'n1' }),
          pod('failed-refused', 'Failed', { node: 'n1' }),
          pod('never-scheduled', 'Pending'),
          pod('gone-already', 'Succeeded', { node: 'n1' }),
          pod('running', 'Running', { node: 'n1' }),
          pod('going', 'Failed', { node: 'n1', deleting: true }),
          pod('owned-ended', 'Succeeded', { node: 'n1', owned: true }),
          pod('of-a-listed-job', 'Succeeded', { node: 'n1', jobUid: 'uid-listed' }),
        ],
        releasePod: async () => {
          throw new Error('no pod here holds our finalizer');
        },
        deletePod: async (swept) => {
          if (swept.name === 'failed-refused') throw new Error('delete pods: Forbidden');
          deleted.push(`${swept.name}@${swept.view.metadata.uid}`);
          // Gone already: not counted.
          return swept.name !== 'gone-already';
        },
      },
      listers({ listJobs: async () => [{ ...job('j1', 'a', true, true), uid: 'uid-listed' }] }),
    );
    expect(report).toMatchObject({ state: 'ran', podsReleased: 0, podsDeleted: 2 });
    expect(deleted).toEqual([
      'ended@uid-ended',
      'never-scheduled@uid-never-scheduled',
      'gone-already@uid-gone-already',
    ]);
    expect(warnings).toEqual(['sweep: delete orphaned pod: failed']);
  });

  it('without the lease: does nothing', async () => {
    const schedule = new MemorySchedule();
    const { step, calls } = recordingStep();
    const report = await runSweepIfDue({
      lease: lease(true),
      holder: 'i2',
      listers: listers(),
      settle: memorySettle(step, schedule),
      schedule,
      dedupe: allSeen,
      clock: () => T0,
      logger: silent,
      periodMs: 600_000,
      concurrency: 2,
    });
    expect(report).toEqual({ state: 'skipped', reason: 'NotDueOrHeldElsewhere' });
    expect(calls).toEqual([]);
    expect(schedule.due.size).toBe(0);
  });

  it('a listing outage fails the sweep without throwing and gives the lease back for the next tick', async () => {
    const l = lease(false);
    const report = await runSweepIfDue({
      lease: l,
      holder: 'i1',
      listers: listers({
        listJobs: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      }),
      settle: memorySettle(recordingStep().step, new MemorySchedule()),
      schedule: new MemorySchedule(),
      dedupe: allSeen,
      clock: () => T0,
      logger: silent,
      periodMs: 600_000,
      concurrency: 2,
    });
    expect(report).toMatchObject({ state: 'failed', reason: 'ListOrScheduleFailed' });
    expect(l.released).toBe(1);
  });

  it('a schedule outage in the requeue pass fails the sweep before any step, and gives the lease back', async () => {
    const l = lease(false);
    const steps = recordingStep();
    const schedule = new MemorySchedule();
    schedule.ensure = async () => {
      throw new Error("Redis: Stream isn't writeable");
    };
    const report = await runSweepIfDue({
      lease: l,
      holder: 'i1',
      listers: listers(),
      settle: memorySettle(steps.step, schedule),
      schedule,
      dedupe: allSeen,
      clock: () => T0,
      logger: silent,
      periodMs: 600_000,
      concurrency: 2,
    });
    expect(report).toMatchObject({ state: 'failed', reason: 'ListOrScheduleFailed' });
    expect(l.released).toBe(1);
    expect(steps.calls).toEqual([]);
  });
});

describe('POST / (cron triggers of function platforms)', () => {
  it('a PingSource event at the root runs a tick', async () => {
    const t = testApp();
    await t.schedule.add(c('a'), T0 - 1);
    const response = await t.app.inject({
      method: 'POST',
      url: '/',
      headers: {
        ...auth,
        'ce-type': 'dev.knative.sources.ping',
        'ce-specversion': '1.0',
        'content-type': 'application/json',
      },
      payload: '{}',
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().completed).toBe(1);
  });

  it('anything else at the root is 404 with the right addresses in the message', async () => {
    const t = testApp();
    const response = await t.app.inject({ method: 'POST', url: '/', headers: auth, payload: '{}' });
    expect(response.statusCode).toBe(404);
    expect(response.json().error.message).toContain('/events');
    expect(t.calls).toEqual([]);
  });
});

describe('POST /tick: CAPTF_WATCH_NAMESPACES', () => {
  it('a requeue of an object outside the watched namespaces is removed without a step; the others run', async () => {
    const t = testApp({ config: { watchNamespaces: ['team-a'] } });
    const elsewhere: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-old', name: 'm1' };
    await t.schedule.add(elsewhere, T0 - 1000);
    await t.schedule.add(c('here'), T0 - 500);
    const response = await t.app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(response.json()).toMatchObject({ claimed: 2, completed: 2, dropped: 1, byAction: { none: 1 } });
    expect(t.calls.map((call) => call.ref.name)).toEqual(['here']);
    expect(t.schedule.dueAt(elsewhere)).toBeUndefined();
    expect(t.schedule.claimed.size).toBe(0);
  });
});
