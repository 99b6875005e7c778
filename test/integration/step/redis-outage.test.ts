import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { type LocalRedis, startRedis } from '../../../src/local/redis-server.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import {
  createObject,
  createStepEnv,
  finishJob,
  jobsOf,
  podOf,
  readObject,
  result,
  runPod,
  type StepEnv,
  statusOf,
  stepUntil,
} from './harness.ts';

// Redis stopped mid-test (issue 4), C16 and C17: a dedicated redis-server this file stops and restarts.
// While it is down every step answers `unavailable` and changes nothing; once it is back, the next steps
// finish every run. Redis is never the only guard: the API server guard keeps one Job per attempt.

let env: StepEnv;
let redisServer: LocalRedis;
let redis: RedisAdapter;
/** The dedicated redis-server's; removed after the afterAll below has stopped it. */
const workDir = testTempDir('captf-step-redis-');

async function startDedicatedRedis(port?: number): Promise<void> {
  redisServer = await startRedis({ workDir, name: 'step-redis', ...(port !== undefined ? { port } : {}) });
}

async function redisReady(): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    if ((await redis.ping()).kind === 'pong') return;
    await sleep(100);
  }
  throw new Error('redis did not come back');
}

beforeAll(async () => {
  env = await createStepEnv('redis');
  await startDedicatedRedis();
  redis = createRedisAdapter({ url: redisServer.url, keyPrefix: 'outage' });
  await redis.waitUntilReady(10_000);
});

afterAll(async () => {
  await redis?.close();
  await redisServer?.stop();
  await env?.close();
});

describe('Redis stopped mid-test', () => {
  it('steps answer unavailable without side effects, and after Redis returns the next steps finish every run', async () => {
    const step = env.step({ redis });
    const ref = await createObject(env, 'TerraformMachine', 'm-outage');
    await stepUntil(step, ref, 'none');
    const before = await readObject(env, ref);

    const port = redisServer.port;
    await redisServer.stop();
    const down = await step(ref);
    expect(down).toMatchObject({ action: 'unavailable' });
    expect((await readObject(env, ref)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(await jobsOf(env, ref)).toEqual([]);

    await startDedicatedRedis(port);
    await redisReady();
    const created = await stepUntil(step, ref, 'created');
    const job = created.job ?? '';
    await runPod(env, await podOf(env, job));

    // Down again while the Job runs; it finishes meanwhile; nothing is recorded until Redis is back.
    await redisServer.stop();
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    const stillDown = await step(ref);
    expect(stillDown.action).toBe('unavailable');
    expect((await statusOf(env, ref)).lastRun).toBeUndefined();

    // C16: Redis restarted empty (no leases, no locks); two calls race; still one Job, the run recorded once.
    await startDedicatedRedis(port);
    await redisReady();
    const [a, b] = await Promise.all([step(ref), step(ref)]);
    expect([a.action, b.action].sort()).toEqual(['bookkept', 'deferred']);
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({ job, result: 'succeeded' });
    expect(await jobsOf(env, ref)).toHaveLength(1);
    expect(await redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });
  });

  it('C16: after a restart in the middle of a run, a racing second call neither takes a second lease nor creates a second Job', async () => {
    const step = env.step({ redis });
    const ref = await createObject(env, 'TerraformMachine', 'm-c16');
    const created = await stepUntil(step, ref, 'created');
    const port = redisServer.port;
    await redisServer.stop();
    await startDedicatedRedis(port);
    await redisReady();
    // The lease is gone with the restart; both calls read the live Job and only watch it (one re-takes the
    // lease under the Job's own name, atomically).
    const outcomes = await Promise.all([step(ref), step(ref)]);
    expect(outcomes.map((o) => o.action).sort()).toEqual(['deferred', 'watching']);
    expect(await jobsOf(env, ref)).toHaveLength(1);
    expect(await redis.runLeases.read({ object: ref })).toMatchObject({
      kind: 'held',
      token: { holder: created.job },
    });
  });

  it('C17: the lease is renewed while the Job is active; a release with a foreign token leaves it; no second Job while a pod lives', async () => {
    const step = env.step({ redis });
    const ref = await createObject(env, 'TerraformMachine', 'm-c17');
    const created = await stepUntil(step, ref, 'created');
    const job = created.job ?? '';
    const key = redis.keys.leaseGroup(ref, undefined).run;
    await redis.client.pexpire(key, 2000);
    await step(ref);
    expect(await redis.client.pttl(key)).toBeGreaterThan(3600 * 1000);
    const held = await redis.runLeases.read({ object: ref });
    if (held.kind !== 'held') throw new Error('lease not held');
    expect(
      await redis.runLeases.release({ object: ref }, { holder: 'someone-else', fence: held.token.fence }),
    ).toEqual({ kind: 'not-held' });
    expect(await redis.runLeases.read({ object: ref })).toMatchObject({
      kind: 'held',
      token: { holder: job },
    });
    // Even with the lease flushed, the live pod keeps a second Job from starting.
    await redis.client.flushall();
    for (let i = 0; i < 3; i += 1) await step(ref);
    expect(await jobsOf(env, ref)).toHaveLength(1);
  });
});
