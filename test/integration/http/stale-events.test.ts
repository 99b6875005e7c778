import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createObject,
  createStepEnv,
  finishJob,
  jobsOf,
  patchSpec,
  readObject,
  result,
  type StepEnv,
  stepUntil,
} from '../step/harness.ts';
import { type EventApp, eventApp } from './event-app.ts';

// Events that arrive late, out of order or replayed (DESIGN.md sections 1 and 13): an event's copy of an
// object may only say "nothing to do"; whatever a step does follows a live read. So a copy of an old
// generation never starts a Job for it, and no status is written from a stale copy, whether the newest
// handled version is remembered (the copy is answered Stale without a read) or lost (the copy reaches a
// step, which reads live and finds nothing to do). On the real API server, Redis and step.

let env: StepEnv;
let events: EventApp;

beforeAll(async () => {
  env = await createStepEnv('stale');
  events = await eventApp(env);
});

afterAll(async () => {
  await events?.close();
  await env?.close();
});

describe('stale and out-of-order events', () => {
  it('an older version after a newer one, and a replay of an old generation, start no Job and write no status', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-stale', { variables: { n: 1 } });
    await stepUntil(env.step(), ref, 'none');
    // Generation 1 as an event carried it, when a step would have started its apply.
    const generation1 = await events.copyOf(ref);
    const first = await env.step()(ref);
    expect(first.action).toBe('created');
    const finished1 = await finishJob(env, first.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded'),
    });
    expect((await env.step()(ref)).action).toBe('bookkept');

    await patchSpec(env, ref, { variables: { n: 2 } });
    const generation2 = await events.copyOf(ref);
    const second = await env.step()(ref);
    expect(second.action).toBe('created');
    await finishJob(env, second.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
    expect((await env.step()(ref)).action).toBe('bookkept');
    expect(await stepUntil(env.step(), ref, 'none')).toMatchObject({ reason: 'UpToDate' });

    const settled = await readObject(env, ref);
    expect(settled.metadata.generation).toBe(2);
    const jobsBefore = (await jobsOf(env, ref)).map((job) => job.metadata?.name);
    expect(jobsBefore).toHaveLength(2);
    const unchangedSinceSettled = async () => {
      expect((await jobsOf(env, ref)).map((job) => job.metadata?.name)).toEqual(jobsBefore);
      expect((await readObject(env, ref)).metadata.resourceVersion).toBe(settled.metadata.resourceVersion);
    };

    // Generation 2's copy first (nothing handled yet: a step reads live and finds nothing to do), then
    // generation 1's, older: stale, no read.
    const newer = await events.deliver('resource', 'update', generation2);
    expect(newer.body).toMatchObject({ handled: true, outcome: { action: 'none', reason: 'UpToDate' } });
    const older = await events.deliver('resource', 'update', generation1);
    expect(older.body).toEqual({ handled: false, reason: 'Stale' });
    expect(older.counts.total).toBe(0);
    await unchangedSinceSettled();

    // The newest handled version lost (a flushed Redis): the old generation's copy reaches a step, which
    // reads live and does nothing.
    await env.redis.client.del(env.redis.keys.newest(ref));
    await env.redis.client.del(
      env.redis.keys.seen(String(generation1.metadata?.uid), String(generation1.metadata?.resourceVersion)),
    );
    const replayed = await events.deliver('resource', 'add', generation1);
    expect(replayed.body).toMatchObject({ handled: true, outcome: { action: 'none', reason: 'UpToDate' } });
    expect(replayed.counts.byRequest['create jobs'] ?? 0).toBe(0);
    expect(replayed.counts.byRequest['patch terraformmachines/status'] ?? 0).toBe(0);
    await unchangedSinceSettled();

    // The first Job's end replayed from before its bookkeeping: the copy says "finished, not bookkept", so
    // a step runs; live, the Job is bookkept already, and nothing is written again.
    const replayedEnd = await events.deliver('resource', 'update', {
      ...finished1,
      apiVersion: 'batch/v1',
      kind: 'Job',
    });
    expect(replayedEnd.body).toMatchObject({ handled: true, outcome: { action: 'none' } });
    expect(replayedEnd.counts.byRequest['patch jobs'] ?? 0).toBe(0);
    await unchangedSinceSettled();

    // A newer version with nothing a step reads changed, then the replayed generation 1 again: both quiet.
    const current = await events.copyOf(ref);
    expect((await events.deliver('resource', 'update', current)).body.handled).toBe(false);
    expect((await events.deliver('resource', 'update', generation1)).body).toMatchObject({
      handled: false,
    });
    await unchangedSinceSettled();
  });
});
