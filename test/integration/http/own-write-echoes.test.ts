import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeWriter } from '../../../src/adapters/kube/writer.ts';
import { BLOCK_MOVE_ANNOTATION } from '../../../src/core/block-move.ts';
import { NO_FAILPOINTS } from '../../../src/step/failpoints.ts';
import { createReconcileStep } from '../../../src/step/step.ts';
import { NO_STEP_METRICS } from '../../../src/step/step-metrics.ts';
import {
  createObject,
  createStepEnv,
  finishJob,
  jobsOf,
  result,
  type StepEnv,
  stepUntil,
} from '../step/harness.ts';
import { type Delivered, type EventApp, eventApp } from './event-app.ts';

// The watch event of a step's own write comes back while that step may still be running (DESIGN.md
// section 8). Before, it found the step lock held: 202, a requeue 2 s later, and a step that read the
// object to find nothing. Now every version the step writes is marked as its own as it is written, so its
// Resource-mode event starts nothing (`OwnWrite`), from Redis; the finalizer write, whose event starts the
// next step, is not marked; and the mark records nothing as handled, so the event that started a step
// that died after its write, sent again, still starts a step.
// The real step, Redis and API server; the event goes through the real handlers (./event-app.ts) while a
// second step, the one under test, holds the object's step lock between its writes.

let env: StepEnv;
let events: EventApp;

beforeAll(async () => {
  env = await createStepEnv('echoes');
  events = await eventApp(env);
});

afterAll(async () => {
  await events?.close();
  await env?.close();
});

describe('the event of a write made by a step still running', () => {
  it('starts nothing, with no request and no deferral; the Job-creating step goes on to one Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-echo');
    // The finalizer step (its runner identity too): its write's event must start the next step.
    const added = await events.deliver('resource', 'add', await events.copyOf(ref));
    expect(added.body.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });

    // The step under test: once its Job exists, its first write (the block-move annotation, before the
    // Job) comes back as an event while the step still holds the lock and has its status to write.
    let midStep: Delivered | undefined;
    let annotated: unknown;
    const writer = new Proxy(env.kube.writer, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        // The adapter keeps private fields: its methods run on the adapter itself, not on the proxy.
        if (typeof value !== 'function') return value;
        if (property !== 'createJob') return value.bind(target);
        return async (...args: Parameters<KubeWriter['createJob']>) => {
          const job = await (value as KubeWriter['createJob']).apply(target, args);
          const copy = await events.copyOf(ref);
          annotated = copy.metadata?.annotations;
          midStep = await events.deliver('resource', 'update', copy);
          return job;
        };
      },
    });
    const step = createReconcileStep({
      kube: { reader: env.kube.reader, writer },
      redis: env.redis,
      clock: env.clock,
      config: env.config,
      failpoints: NO_FAILPOINTS,
      metrics: NO_STEP_METRICS,
    });
    const created = await stepUntil(step, ref, 'created');
    expect(annotated).toHaveProperty(BLOCK_MOVE_ANNOTATION);
    expect(midStep?.status).toBe(200);
    expect(midStep?.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(midStep?.counts.total).toBe(0);

    // The version the step left comes back too (settling would also mark it seen): its own, one Job.
    const last = await events.deliver('resource', 'update', await events.copyOf(ref));
    expect(last.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(last.counts.total).toBe(0);
    expect((await jobsOf(env, ref)).map((job) => job.metadata?.name)).toEqual([created.job]);
  });

  it('a step that died after its write: the echo starts nothing, the event sent again starts the step', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-echo-crash');
    const added = await events.deliver('resource', 'add', await events.copyOf(ref));
    expect(added.body.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });
    // The finalizer write's version: the event that starts the Job-creating step.
    const trigger = await events.copyOf(ref);
    await expect(env.step({ failpoints: ['after-block-move'], shadow: false })(ref)).rejects.toThrow(
      'after-block-move',
    );
    const echo = await events.deliver('resource', 'update', await events.copyOf(ref));
    expect(echo.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(await jobsOf(env, ref)).toEqual([]);
    // The source sends the trigger again (its call failed with the step): the mark recorded nothing handled.
    const again = await events.deliver('resource', 'update', trigger);
    expect(again.body).toMatchObject({ handled: true, outcome: { action: 'created' } });
    expect(await jobsOf(env, ref)).toHaveLength(1);
  });

  it('a spec write (a contract field) is not marked: its new generation reaches the next step, which records it', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-echo-spec');
    const created = await stepUntil(env.step({ shadow: false }), ref, 'created');
    await finishJob(env, created.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs: { providerID: `demo://${ref.name}` } }),
    });
    // Bookkeeping writes spec.providerID (generation 1 → 2), then its status, observed at generation 1.
    const bookkept = await env.step({ shadow: false })(ref);
    expect(bookkept.action).toBe('bookkept');
    const copy = await events.copyOf(ref);
    expect(copy.metadata?.generation).toBe(2);
    expect((copy as { status?: { observedGeneration?: number } }).status?.observedGeneration).toBe(1);
    const echo = await events.deliver('resource', 'update', copy);
    expect(echo.body).toMatchObject({ handled: true });
    const after = (await events.copyOf(ref)) as { status?: { observedGeneration?: number } };
    expect(after.status?.observedGeneration).toBe(2);
  });

  it("the finalizer write's event is not marked: it starts the next step", async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-echo-finalizer');
    const added = await events.deliver('resource', 'add', await events.copyOf(ref));
    expect(added.body.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });
    const echo = await events.deliver('resource', 'update', await events.copyOf(ref));
    expect(echo.body).toMatchObject({ handled: true, outcome: { action: 'created' } });
  });
});
