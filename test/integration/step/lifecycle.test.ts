import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createStepEnv,
  eventsOf,
  finishJob,
  jobsOf,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
} from './harness.ts';

// The life of one Job through the step against the real API server, Job controller and Redis.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('life');
});

afterAll(async () => {
  await env?.close();
});

describe('one apply, end to end', () => {
  it('creates the Job, its per-run Secret and status.activeJob, then bookkeeps the success', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-a', {
      variables: { size: 'small' },
    });
    const jobs = await jobsOf(env, ref);
    expect(jobs.map((j) => j.metadata?.name)).toEqual([job]);
    const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
    expect(secret?.metadata?.ownerReferences?.[0]?.name).toBe(job);
    const active = await statusOf(env, ref);
    expect(active.activeJob).toMatchObject({ name: job, op: 'apply', attempt: 1 });

    await finishJob(env, job, {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs: { providerID: 'demo://m-a' } }),
    });
    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded', job });
    const status = await statusOf(env, ref);
    expect(status.activeJob).toBeUndefined();
    expect(status.lastRun).toMatchObject({
      job,
      op: 'apply',
      attempt: 1,
      result: 'succeeded',
      reason: 'ApplySucceeded',
      generation: 1,
    });
    expect(status.ready).toBe(true);
    expect(status.lastSuccess?.apply).toBeDefined();
    const [bookkept] = await jobsOf(env, ref);
    expect(bookkept?.metadata?.annotations?.['captf.io/bookkept']).toBe('true');
    expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`)).toBeUndefined();
    const reasons = (await eventsOf(env, ref)).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['JobCreated', 'JobSucceeded']));
    const object = await readObject(env, ref);
    expect(object.spec).toMatchObject({ providerID: 'demo://m-a' });

    const idle = await env.step()(ref);
    expect(idle).toMatchObject({ action: 'none', reason: 'UpToDate' });
  });
});
