import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
import { type Failpoint, FailpointAbort } from '../../../src/step/failpoints.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createStepEnv,
  endPod,
  eventsOf,
  expireStepLock,
  jobFinished,
  jobsOf,
  patchSpec,
  podOf,
  readObject,
  result,
  type StepEnv,
  statusOf,
  stepUntil,
} from './harness.ts';

// Crash safety (issue 4): for every failpoint, a step that dies right after that mutation is followed by
// ordinary steps that converge to exactly one Job per (object, op, attempt), one recorded result per Job,
// no leaked per-run Secret and no stuck lease. Plus concurrency, C02 and C03.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('crash');
});

afterAll(async () => {
  await env?.close();
});

/** The failpoints the two-apply scenario below passes through. */
const SCENARIO_FAILPOINTS: Failpoint[] = [
  'after-step-lock',
  'after-finalizer-patch',
  'after-lease-take',
  'after-slot-take',
  'after-runner-identity',
  'after-job-create',
  'after-run-secret-create',
  'after-active-status',
  'after-event',
  'after-lease-renew',
  'after-contract-spec-patch',
  'after-bookkeep-status',
  'after-run-secret-delete',
  'after-bookkept-mark',
  'after-lease-release',
  'after-prune-delete',
];

/** Where the two-apply scenario is. */
interface World {
  phase: 'first' | 'second' | 'done';
}

/** Ends the running Job's pod (success, with a contract output) when one is still pending. */
async function finishActiveJob(ref: ObjectRef): Promise<void> {
  const active = (await jobsOf(env, ref)).find(
    (job) =>
      !job.status?.conditions?.some(
        (c) => c.status === 'True' && (c.type === 'Complete' || c.type === 'Failed'),
      ),
  );
  const name = active?.metadata?.name;
  if (!name || active?.metadata?.deletionTimestamp) return;
  const pod = await podOf(env, name);
  if (pod.status?.phase !== 'Pending') return;
  await endPod(env, pod, {
    exitCode: 0,
    result: result('apply', 'succeeded', { outputs: { providerID: `demo://${ref.name}` } }),
  });
  await jobFinished(env, name);
}

/** Ends a Job's pod as `end` says and waits for the Job controller. */
async function finishJobWith(job: string, end: Parameters<typeof endPod>[2]): Promise<void> {
  await endPod(env, await podOf(env, job), end);
  await jobFinished(env, job);
}

/** Moves the world on after an outcome: finish a watched Job; change the inputs once the first apply is in. */
async function advance(ref: ObjectRef, outcome: StepOutcome, world: World): Promise<void> {
  if (outcome.action === 'watching') await finishActiveJob(ref);
  if (outcome.action === 'none' && outcome.reason === 'UpToDate') {
    if (world.phase === 'first') {
      await patchSpec(env, ref, { variables: { n: 2 } });
      world.phase = 'second';
    } else {
      world.phase = 'done';
    }
  }
}

/** Runs `step` once; a failpoint abort is a crash: the lock expires (as after 30 s) and `true` comes back. */
async function stepOrCrash(step: ReconcileStep, ref: ObjectRef): Promise<StepOutcome | 'crashed'> {
  try {
    return await step(ref);
  } catch (error) {
    if (!(error instanceof FailpointAbort)) throw error;
    await expireStepLock(env, ref);
    return 'crashed';
  }
}

async function assertConverged(ref: ObjectRef): Promise<void> {
  const object = await readObject(env, ref);
  const status = await statusOf(env, ref);
  const jobs = await jobsOf(env, ref);
  const keys = jobs.map(
    (job) => `${job.metadata?.labels?.['captf.io/op']}/${job.metadata?.labels?.['captf.io/attempt']}`,
  );
  expect(new Set(keys).size).toBe(keys.length);
  // The providerID write of the first apply moved the generation on; the second apply ran the newest.
  expect(status.lastRun).toMatchObject({
    op: 'apply',
    attempt: 2,
    result: 'succeeded',
    generation: object.metadata.generation,
  });
  expect(status.activeJob).toBeUndefined();
  expect(object.spec).toMatchObject({ providerID: `demo://${ref.name}` });
  const succeeded = (await eventsOf(env, ref)).filter((event) => event.reason === 'JobSucceeded');
  expect(succeeded).toHaveLength(2);
  expect(new Set(succeeded.map((event) => event.note)).size).toBe(2);
  const secrets = await env.kube.reader.listSecrets({
    namespace: env.namespace,
    labelSelector: { 'captf.io/owner-uid': object.metadata.uid },
  });
  expect(secrets.filter((secret) => secret.metadata?.name?.startsWith('captf-run-'))).toEqual([]);
  expect(await env.redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });
  for (const job of jobs) {
    expect(
      await env.redis.client.zscore(
        env.redis.keys.installationSlots(),
        `${env.namespace}/${job.metadata?.name}`,
      ),
    ).toBeNull();
  }
}

describe('crash safety: every failpoint, then ordinary steps', () => {
  it.each(SCENARIO_FAILPOINTS)(
    '%s: converges to one Job per attempt, one result, no leaked Secret, no stuck lease',
    async (failpoint) => {
      const ref = await createObject(env, 'TerraformMachine', `m-${failpoint.replace('after-', '')}`, {
        variables: { n: 1 },
        jobs: { successfulJobsHistoryLimit: 1 },
      });
      const world: World = { phase: 'first' };
      const armed = env.step({ failpoints: [failpoint] });
      let crashes = 0;
      for (let i = 0; i < 12 && world.phase !== 'done' && crashes === 0; i += 1) {
        const outcome = await stepOrCrash(armed, ref);
        if (outcome === 'crashed') crashes += 1;
        else await advance(ref, outcome, world);
      }
      expect(crashes).toBe(1);
      const plain = env.step();
      for (let i = 0; i < 15 && world.phase !== 'done'; i += 1) await advance(ref, await plain(ref), world);
      expect(world.phase).toBe('done');
      await assertConverged(ref);
    },
  );
});

describe('duplicates and concurrency', () => {
  it('C02: the Job was created, then the step died: the next step adopts it, creates the missing Secret, writes the status; attempt 1, one Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-c02');
    await stepUntil(env.step(), ref, 'none');
    expect(await stepOrCrash(env.step({ failpoints: ['after-job-create'] }), ref)).toBe('crashed');
    const [job] = await jobsOf(env, ref);
    const name = job?.metadata?.name ?? '';
    expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${name}`)).toBeUndefined();
    const again = await env.step()(ref);
    expect(again).toMatchObject({ action: 'watching', job: name });
    expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${name}`)).toBeDefined();
    expect((await statusOf(env, ref)).activeJob).toMatchObject({ name, attempt: 1 });
    for (let i = 0; i < 10; i += 1) await env.step()(ref);
    expect(await jobsOf(env, ref)).toHaveLength(1);
  });

  it('C02: the status write after the Secret failed: the next step writes it; still one Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-c02b');
    await stepUntil(env.step(), ref, 'none');
    expect(await stepOrCrash(env.step({ failpoints: ['after-run-secret-create'] }), ref)).toBe('crashed');
    expect((await statusOf(env, ref)).activeJob).toBeUndefined();
    const again = await env.step()(ref);
    expect(again.action).toBe('watching');
    expect((await statusOf(env, ref)).activeJob?.attempt).toBe(1);
    expect(await jobsOf(env, ref)).toHaveLength(1);
    // The state suffix the lost write carried comes back from the Job: a later run finds the same state.
    const [job] = await jobsOf(env, ref);
    expect(job?.metadata?.annotations?.['captf.io/state-suffix']).toBe('m-m-c02b');
    expect((await statusOf(env, ref)).stateSuffix).toBe('m-m-c02b');
  });

  it('C03: an event older than the world: redelivered and relayed twice, decisions come from live reads; no second Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-c03');
    const created = await stepUntil(env.step(), ref, 'created');
    const replays = await Promise.all([env.step()(ref), env.step()(ref)]);
    const later = await env.step()(ref);
    expect([...replays, later].every((o) => o.action === 'watching' || o.action === 'deferred')).toBe(true);
    expect((await jobsOf(env, ref)).map((j) => j.metadata?.name)).toEqual([created.job]);
  });

  it('N steps for one object started at once create one Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-burst');
    await stepUntil(env.step(), ref, 'none');
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => env.step()(ref)));
    expect(outcomes.filter((o) => o.action === 'created')).toHaveLength(1);
    expect(outcomes.filter((o) => o.action === 'deferred')).toHaveLength(7);
    expect(await jobsOf(env, ref)).toHaveLength(1);
  });

  it('N steps at once with no shared Redis state (a lock and lease each): the deterministic name and the API server still make one Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-burst-noredis');
    await stepUntil(env.step(), ref, 'none');
    const adapters = Array.from({ length: 6 }, () =>
      createRedisAdapter({ url: testStack().redisUrl, keyPrefix: `t${randomBytes(4).toString('hex')}` }),
    );
    try {
      await Promise.all(adapters.map((redis) => redis.waitUntilReady(5000)));
      const outcomes = await Promise.all(adapters.map((redis) => env.step({ redis })(ref)));
      expect(outcomes.filter((o) => o.action === 'unavailable')).toEqual([]);
      const jobs = await jobsOf(env, ref);
      expect(jobs).toHaveLength(1);
      expect(
        await env.kube.reader.getSecret(env.namespace, `captf-run-${jobs[0]?.metadata?.name}`),
      ).toBeDefined();
    } finally {
      await Promise.all(adapters.map((redis) => redis.close()));
    }
  });
});

describe('crash safety on the special paths', () => {
  it('after-plan-write: a blocked run crashed after its TerraformPlan was created records one plan and waits for approval', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-fp-plan');
    const created = await stepUntil(env.step(), ref, 'created');
    await finishJobWith(created.job ?? '', {
      exitCode: 3,
      result: result('apply', 'blocked', {
        plan: { digest: `sha256:${'c'.repeat(64)}`, add: 1, change: 0, destroy: 1, destructive: true },
      }),
    });
    expect(await stepOrCrash(env.step({ failpoints: ['after-plan-write'] }), ref)).toBe('crashed');
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'AwaitingApproval' });
    expect(await env.step()(ref)).toMatchObject({ action: 'waiting', reason: 'AwaitingApproval' });
    const status = await statusOf(env, ref);
    expect(status.pendingPlanRef?.name).toBe(`${created.job}-plan`);
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'DestructivePlanBlocked')).toHaveLength(1);
  });

  it('after-deadline-delete: a run recorded and deleted for its deadline stays recorded once', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-fp-deadline', {
      jobs: { activeDeadlineSeconds: 600, lockTimeoutSeconds: 60 },
    });
    const created = await stepUntil(env.step(), ref, 'created');
    const late = 600 + 600 + 61;
    env.clock.advance(late);
    try {
      expect(await stepOrCrash(env.step({ failpoints: ['after-deadline-delete'] }), ref)).toBe('crashed');
      await env.step()(ref);
      await env.step()(ref);
    } finally {
      env.clock.advance(-late);
    }
    expect((await statusOf(env, ref)).lastRun).toMatchObject({
      job: created.job,
      reason: 'JobDeadlineExceeded',
    });
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'JobDeadlineExceeded')).toHaveLength(1);
    expect((await jobsOf(env, ref)).map((j) => j.metadata?.name)).not.toContain(created.job);
  });

  it("after-stuck-delete: the stuck Job's lease is healed and one new Job starts", async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-fp-stuck', { variables: { v: 1 } });
    await stepUntil(env.step(), ref, 'none');
    expect(await stepOrCrash(env.step({ failpoints: ['after-job-create'] }), ref)).toBe('crashed');
    const [stuck] = await jobsOf(env, ref);
    await patchSpec(env, ref, { variables: { v: 2 } });
    env.clock.advance(61);
    try {
      expect(await stepOrCrash(env.step({ failpoints: ['after-stuck-delete'] }), ref)).toBe('crashed');
    } finally {
      env.clock.advance(-61);
    }
    const next = await stepUntil(env.step(), ref, 'created');
    expect(next.job).not.toBe(stuck?.metadata?.name);
    expect(await env.redis.runLeases.read({ object: ref })).toMatchObject({
      kind: 'held',
      token: { holder: next.job },
    });
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'StuckJobDeleted')).toHaveLength(1);
  });
});
