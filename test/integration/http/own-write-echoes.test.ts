import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { BLOCK_MOVE_ANNOTATION } from '../../../src/core/block-move.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { KubeObject } from '../../../src/relay/event.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
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
// next step, is not marked; a spec write is, as the status written after it records the generation it
// left; and the mark records nothing as handled, so the event that started a step that died after its
// write, sent again, still starts a step.
// The real step, Redis and API server; the event goes through the real handlers (./event-app.ts) while a
// second step, the one under test, holds the object's step lock between its writes.

/** How long the racing writer takes to mark its write, in ms: the event arrives first. */
const MARK_DELAY_MS = 150;

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

    // The step under test: its first write (the block-move annotation) comes back as an event while the
    // step still holds the lock, about to create its Job and write its status.
    const { step, echoes } = stepEchoing('before', 'createJob', ref);
    const created = await stepUntil(step, ref, 'created');
    const [midStep] = echoes;
    expect(midStep?.copy.metadata?.annotations).toHaveProperty(BLOCK_MOVE_ANNOTATION);
    expect(midStep?.delivered.status).toBe(200);
    expect(midStep?.delivered.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(midStep?.delivered.counts.total).toBe(0);

    // The version the step left comes back too (settling would also mark it seen): its own, one Job.
    const last = await events.deliver('resource', 'update', await events.copyOf(ref));
    expect(last.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(last.counts.total).toBe(0);
    expect((await jobsOf(env, ref)).map((job) => job.metadata?.name)).toEqual([created.job]);
  });

  it("the event of a write that beats the writer's mark waits for the step: the step's own, no deferral", async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-echo-race');
    const added = await events.deliver('resource', 'add', await events.copyOf(ref));
    expect(added.body.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });
    // The block-move write's event is sent the moment the write returns, before the step marks it.
    const { step, echoes, racing, markedAtMs } = stepEchoing('racing', 'patchCustomMetadata', ref);
    const created = await stepUntil(step, ref, 'created');
    await Promise.all(racing);
    const [race] = echoes;
    expect(race?.copy.metadata?.annotations).toHaveProperty(BLOCK_MOVE_ANNOTATION);
    // The race took place: the event was on its way before its version was marked.
    expect(race?.sentAtMs).toBeLessThan(markedAtMs[0] ?? 0);
    // Before: judged news, it found the lock held (202, a requeue in 2 s and a step that found nothing).
    expect(race?.delivered.status).toBe(200);
    // (Its request count is not its own: the step it waited for ran meanwhile.)
    expect(race?.delivered.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
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

  it("a spec write (a contract field): the step's status records the generation it left, and neither echo starts a step", async () => {
    const ref = await appliedWithProviderID('m-echo-spec');
    // Bookkeeping writes spec.providerID (generation 1 → 2), then its status, observed at generation 2:
    // recording 1, the object would look still progressing until some unrelated step.
    const { step, echoes } = stepEchoing('before', 'patchStatus', ref);
    const bookkept = await step(ref);
    expect(bookkept.action).toBe('bookkept');
    const [specEcho] = echoes;
    expect(specEcho?.copy.metadata?.generation).toBe(2);
    expect(specEcho?.delivered.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(specEcho?.delivered.counts.total).toBe(0);
    const copy = await events.copyOf(ref);
    const status = (copy as { status?: TargetStatus }).status;
    expect(copy.metadata?.generation).toBe(2);
    expect(status?.observedGeneration).toBe(2);
    expect(status?.conditions?.find((c) => c.type === 'Ready')?.observedGeneration).toBe(2);
    const last = await events.deliver('resource', 'update', copy);
    expect(last.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    expect(last.counts.total).toBe(0);
  });

  it("a step that died after its spec write: the echo starts nothing, the Job's event sent again records the run", async () => {
    const ref = await appliedWithProviderID('m-echo-spec-crash');
    const [job] = await jobsOf(env, ref);
    // The Job's finish event started bookkeeping, which died right after the contract field patch.
    const finished = { apiVersion: 'batch/v1', kind: 'Job', ...job };
    await expect(
      env.step({ failpoints: ['after-contract-spec-patch'], shadow: false })(ref, { listJobs: true }),
    ).rejects.toThrow('after-contract-spec-patch');
    const echo = await events.deliver('resource', 'update', await events.copyOf(ref));
    expect(echo.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
    // The source sends the Job's event again (its call failed with the step): the run is recorded.
    const again = await events.deliver('resource', 'update', finished);
    expect(again.body).toMatchObject({ handled: true, outcome: { action: 'bookkept' } });
    const after = await events.copyOf(ref);
    expect(after.metadata?.generation).toBe(2);
    expect((after as { status?: TargetStatus }).status?.observedGeneration).toBe(2);
  });

  it("the finalizer write's event is not marked: it starts the next step", async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-echo-finalizer');
    const added = await events.deliver('resource', 'add', await events.copyOf(ref));
    expect(added.body.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });
    const echo = await events.deliver('resource', 'update', await events.copyOf(ref));
    expect(echo.body).toMatchObject({ handled: true, outcome: { action: 'created' } });
  });
});

/** A machine whose first apply finished with a `providerID` output, not yet bookkept (generation 1). */
async function appliedWithProviderID(name: string): Promise<ObjectRef> {
  const ref = await createObject(env, 'TerraformMachine', name);
  const created = await stepUntil(env.step({ shadow: false }), ref, 'created');
  await finishJob(env, created.job ?? '', {
    exitCode: 0,
    result: result('apply', 'succeeded', { outputs: { providerID: `demo://${ref.name}` } }),
  });
  return ref;
}

/**
 * A step whose writer delivers the object's copy as a Resource-mode update while the step still holds the
 * lock: `before` `method` runs, awaited (the echo of the step's previous write), or `racing` right after
 * `method` returns and before the step marks the version it wrote, not awaited (the watch event beating the
 * writer's mark, as on a busy machine).
 */
function stepEchoing(
  when: 'before' | 'racing',
  method: 'createJob' | 'patchStatus' | 'patchCustomMetadata',
  ref: ObjectRef,
): {
  step: ReconcileStep;
  echoes: { copy: KubeObject; sentAtMs: number; delivered: Delivered }[];
  racing: Promise<unknown>[];
  markedAtMs: number[];
} {
  const echoes: { copy: KubeObject; sentAtMs: number; delivered: Delivered }[] = [];
  const racing: Promise<unknown>[] = [];
  const markedAtMs: number[] = [];
  const echo = async () => {
    const copy = await events.copyOf(ref);
    const sentAtMs = Date.now();
    echoes.push({ copy, sentAtMs, delivered: await events.deliver('resource', 'update', copy) });
  };
  const writer = new Proxy(env.kube.writer, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      // The adapter keeps private fields: its methods run on the adapter itself, not on the proxy.
      if (typeof value !== 'function') return value;
      if (property !== method) return value.bind(target);
      return async (...args: unknown[]) => {
        if (when === 'before') await echo();
        const written = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (when === 'racing') racing.push(echo());
        return written;
      };
    },
  });
  // Racing, the writer's process is slow to come back to its mark (a busy machine): the event is sent first.
  const redis: RedisAdapter =
    when === 'racing'
      ? {
          ...env.redis,
          async markOwnWrite(version) {
            await sleep(MARK_DELAY_MS);
            markedAtMs.push(Date.now());
            return env.redis.markOwnWrite(version);
          },
        }
      : env.redis;
  const step = createReconcileStep({
    kube: { reader: env.kube.reader, writer },
    redis,
    clock: env.clock,
    config: env.config,
    failpoints: NO_FAILPOINTS,
    metrics: NO_STEP_METRICS,
  });
  return { step, echoes, racing, markedAtMs };
}
