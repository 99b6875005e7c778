import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestCounter } from '../../../src/adapters/kube/request-count.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { createMetrics } from '../../../src/metrics/registry.ts';
import { createSettle, type SettleDeps } from '../../../src/settle/settle.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
import {
  emptyFleet,
  logSink,
  MemoryDedupe,
  MemoryDependents,
  MemoryNewest,
  MemorySchedule,
  recordingStep,
  T0,
} from '../http/in-memory.ts';

const ref: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm1' };

/** A pino log that keeps its lines, parsed. */
function collectingLog() {
  const sink = logSink();
  return { lines: sink.lines, log: pino({ level: 'debug' }, sink.stream) };
}

function settleWith(step: ReconcileStep, extra: Partial<SettleDeps> = {}) {
  const metrics = createMetrics(emptyFleet, () => undefined);
  const settle = createSettle({
    step,
    schedule: new MemorySchedule(),
    dedupe: new MemoryDedupe(),
    dependents: new MemoryDependents(),
    metrics,
    clock: () => T0,
    ...extra,
  });
  /** `captf_reconcile_step_kube_requests_total` by action. */
  const requestsByAction = async () => {
    const { values } = await metrics.stepKubeRequests.get();
    return Object.fromEntries(values.map((v) => [String(v.labels.action), v.value]));
  };
  return Object.assign(settle, { requestsByAction });
}

describe('settle: what a step cost the API server, in its log line', () => {
  it('logs kubeRequests, the requests the step itself sent, and only those', async () => {
    const counter = new RequestCounter();
    const { step: answer } = recordingStep();
    const step: ReconcileStep = async (r, options) => {
      counter.record({ verb: 'get', resource: 'terraformmachines' });
      counter.record({ verb: 'list', resource: 'jobs' });
      return answer(r, options);
    };
    counter.record({ verb: 'get', resource: 'pods' }); // before the step: not its cost
    const { lines, log } = collectingLog();
    const settle = settleWith(step, { measureRequests: (run) => counter.measure(run) });
    await settle(ref, { log });
    await settle(ref, { log });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ name: 'm1', action: 'none', kubeRequests: 2, dryRun: false });
    expect(counter.snapshot().total).toBe(5);
    expect(await settle.requestsByAction()).toEqual({ none: 4 });
  });

  it('a step that throws counts what it sent under action "error", and still throws', async () => {
    const counter = new RequestCounter();
    const step: ReconcileStep = async () => {
      counter.record({ verb: 'get', resource: 'terraformmachines' });
      throw new Error('a bug');
    };
    const settle = settleWith(step, { measureRequests: (run) => counter.measure(run) });
    await expect(settle(ref, { log: collectingLog().log })).rejects.toThrow('a bug');
    expect(await settle.requestsByAction()).toEqual({ error: 1 });
  });

  it('a step that sent none logs 0; without a counter the field is absent', async () => {
    const counter = new RequestCounter();
    const measured = collectingLog();
    await settleWith(recordingStep().step, { measureRequests: (run) => counter.measure(run) })(ref, {
      log: measured.log,
    });
    expect(measured.lines[0]?.kubeRequests).toBe(0);
    const plain = collectingLog();
    await settleWith(recordingStep().step)(ref, { log: plain.log });
    expect(plain.lines[0]).not.toHaveProperty('kubeRequests');
  });
});

describe("settle: a wait's safety requeue is priced by the reads of the step that found it", () => {
  /** A step answering `reason` with a requeue of 630 s (600 s and the object's jitter). */
  function waitingStep(reason: 'WaitingForDependencies' | 'Backoff'): ReconcileStep {
    return recordingStep(() => ({ action: 'waiting', reason, requeueAfterSeconds: 630 })).step;
  }

  it.each([
    [0, 630],
    [1, 630],
    [2, 1260],
    [3, 1890],
    // Six reads at most, and never past an hour.
    [9, 3600],
  ])(
    'a safety-net wait found with %i reads (and a write) is looked at again after %i s: the schedule, the answer and the log agree',
    async (reads, seconds) => {
      const counter = new RequestCounter();
      const answer = waitingStep('WaitingForDependencies');
      const step: ReconcileStep = async (r, options) => {
        for (let i = 0; i < reads; i += 1)
          counter.record({ verb: i % 2 ? 'list' : 'get', resource: 'secrets' });
        counter.record({ verb: 'patch', resource: 'terraformmachines/status' });
        return answer(r, options);
      };
      const schedule = new MemorySchedule();
      const { lines, log } = collectingLog();
      const settled = await settleWith(step, { schedule, measureRequests: (run) => counter.measure(run) })(
        ref,
        {
          log,
        },
      );
      expect(settled.outcome.requeueAfterSeconds).toBe(seconds);
      expect(schedule.due.get('TerraformMachine/team-a/m1')?.dueAtMs).toBe(T0 + seconds * 1000);
      expect(lines[0]).toMatchObject({ requeueAfterSeconds: seconds, kubeRequests: reads + 1 });
    },
  );

  it("a time-driven wait keeps its own requeue, and without a counter the table's requeue stands", async () => {
    const counter = new RequestCounter();
    const backoff = waitingStep('Backoff');
    const step: ReconcileStep = async (r, options) => {
      counter.record({ verb: 'get', resource: 'terraformmachines' });
      counter.record({ verb: 'list', resource: 'jobs' });
      return backoff(r, options);
    };
    const timed = await settleWith(step, { measureRequests: (run) => counter.measure(run) })(ref, {
      log: collectingLog().log,
    });
    expect(timed.outcome.requeueAfterSeconds).toBe(630);
    const uncounted = await settleWith(waitingStep('WaitingForDependencies'))(ref, {
      log: collectingLog().log,
    });
    expect(uncounted.outcome.requeueAfterSeconds).toBe(630);
  });
});

describe('settle: the newest version handled, whatever started the step', () => {
  const observed = { uid: 'u1', resourceVersion: '20' };
  const key = 'TerraformMachine/team-a/m1';

  it('a step without an event (the timer, /reconcile, the sweep) leaves the version it left, content unknown', async () => {
    const newest = new MemoryNewest();
    const { step } = recordingStep(() => ({ observed }));
    await settleWith(step, { newest })(ref, { log: collectingLog().log });
    expect(newest.seen.get(key)).toEqual({ ...observed, digest: '' });
  });

  it("an event's step that wrote nothing leaves the event's version with its content; one that wrote, its own", async () => {
    const newest = new MemoryNewest();
    const event = { uid: 'u1', resourceVersion: '20', digest: 'd20' };
    await settleWith(recordingStep(() => ({ observed })).step, { newest })(ref, {
      log: collectingLog().log,
      event,
    });
    expect(newest.seen.get(key)).toEqual(event);
    const wrote = { uid: 'u1', resourceVersion: '25' };
    const later = { uid: 'u1', resourceVersion: '22', digest: 'd22' };
    await settleWith(recordingStep(() => ({ observed: wrote })).step, { newest })(ref, {
      log: collectingLog().log,
      event: later,
    });
    expect(newest.seen.get(key)).toEqual({ ...wrote, digest: '' });
  });

  it('an outage (503) leaves nothing remembered', async () => {
    const newest = new MemoryNewest();
    const { step } = recordingStep(() => ({ action: 'unavailable', reason: 'Unavailable', observed }));
    await settleWith(step, { newest })(ref, { log: collectingLog().log });
    expect(newest.seen.size).toBe(0);
  });
});
