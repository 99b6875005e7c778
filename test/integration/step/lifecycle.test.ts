import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createStepEnv,
  eventsOf,
  finishJob,
  jobsOf,
  MODULE_IMAGE,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// The life of one Job through the step against the real API server, Job controller and Redis, with the
// Cluster API contract fields and the pinned image digest.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('life');
});

afterAll(async () => {
  await env?.close();
});

const DIGEST = `registry.example.com/modules/demo@sha256:${'f'.repeat(64)}`;

describe('one apply, end to end', () => {
  it('creates the Job, its per-run Secret and status.activeJob, then bookkeeps the success with the contract fields and the pinned digest', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-a', {
      variables: { size: 'small' },
    });
    const jobs = await jobsOf(env, ref);
    expect(jobs.map((j) => j.metadata?.name)).toEqual([job]);
    expect(jobs[0]?.spec?.template.spec?.containers[0]?.image).toBe(MODULE_IMAGE);
    const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
    expect(secret?.metadata?.ownerReferences?.[0]?.name).toBe(job);
    const active = await statusOf(env, ref);
    expect(active.activeJob).toMatchObject({ name: job, op: 'apply', attempt: 1 });

    const outputs = { providerID: 'demo://m-a', addresses: [{ type: 'InternalIP', address: '10.0.0.7' }] };
    await finishJob(env, job, {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs, imageDigest: DIGEST }),
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
    expect(status.initialization?.provisioned).toBe(true);
    expect(status.lastSuccess?.apply).toBeDefined();
    expect(status.addresses).toEqual(outputs.addresses);
    expect(status.source?.pinnedImage).toBe(DIGEST);
    const [bookkept] = await jobsOf(env, ref);
    expect(bookkept?.metadata?.annotations?.['captf.io/bookkept']).toBe('true');
    expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`)).toBeUndefined();
    const reasons = (await eventsOf(env, ref)).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['JobCreated', 'JobSucceeded']));
    expect((await readObject(env, ref)).spec).toMatchObject({ providerID: 'demo://m-a' });

    expect(await env.step()(ref)).toMatchObject({ action: 'none', reason: 'UpToDate' });

    // Every op but apply runs the pinned digest (DESIGN.md section 2): the drift check, due after 30 min.
    env.clock.advance(2 * 3600);
    try {
      const drift = await stepUntil(env.step(), ref, 'created');
      const driftJob = (await jobsOf(env, ref)).find((j) => j.metadata?.name === drift.job);
      expect(driftJob?.metadata?.labels?.['captf.io/op']).toBe('drift');
      expect(driftJob?.spec?.template.spec?.containers[0]?.image).toBe(DIGEST);
    } finally {
      env.clock.advance(-2 * 3600);
    }
  });

  it('a machine pool gets spec.providerIDList and status.replicas from its outputs', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachinePool', 'mp-a');
    const outputs = { providerIDList: ['demo://mp-a-0', 'demo://mp-a-1'], replicas: 2 };
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded', { outputs }) });
    await env.step()(ref);
    expect((await readObject(env, ref)).spec).toMatchObject({ providerIDList: outputs.providerIDList });
    expect(await statusOf(env, ref)).toMatchObject({ replicas: 2, ready: true });
  });
});
