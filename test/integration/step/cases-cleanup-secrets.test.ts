import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import { VARIABLES_SECRET_LABELS } from '../../../src/core/variables-opt-in.ts';
import {
  createObject,
  createStepEnv,
  eventsOf,
  eventually,
  finishJob,
  jobsOf,
  patchSpec,
  podOf,
  readObject,
  result,
  type StepEnv,
  statusOf,
  stepUntil,
} from './harness.ts';

// Field cases about cleanup and secrets (shared/cases/CASES.md): C13, C14, C15, through the step.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('cleanup');
});

afterAll(async () => {
  await env?.close();
});

describe('cleanup', () => {
  it('C13: pruning deletes an old Job with Background propagation: no pod with its name label remains', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-c13', {
      variables: { n: 1 },
      jobs: { successfulJobsHistoryLimit: 1 },
    });
    const first = await stepUntil(env.step(), ref, 'created');
    const j1 = first.job ?? '';
    await podOf(env, j1);
    await finishJob(env, j1, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    await patchSpec(env, ref, { variables: { n: 2 } });
    const second = await stepUntil(env.step(), ref, 'created');
    await finishJob(env, second.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    const names = (await jobsOf(env, ref)).map((job) => job.metadata?.name);
    expect(names).toEqual([second.job]);
    await eventually(
      () => env.core.listNamespacedPod({ namespace: env.namespace, labelSelector: `job-name=${j1}` }),
      (list) => list.items.length === 0,
      30_000,
      `pods of ${j1} gone`,
    );
  });

  it('C14: thirty cold starts with history limits 3/3 and one Job deleted by hand: retained Jobs match the limits, no per-run Secret outlives its Job', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-c14', {
      variables: { n: 0 },
      jobs: { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 },
    });
    await stepUntil(env.step(), ref, 'none');
    let deletedByHand = '';
    for (let run = 1; run <= 30; run += 1) {
      await patchSpec(env, ref, { variables: { n: run } });
      // Each run is served by a fresh step (a cold start): nothing is carried between them.
      const created: StepOutcome = await stepUntil(env.step(), ref, 'created');
      const job = created.job ?? '';
      if (run === 17) {
        expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`)).toBeDefined();
        await env.batch.deleteNamespacedJob({
          namespace: env.namespace,
          name: job,
          propagationPolicy: 'Background',
        });
        deletedByHand = job;
        continue;
      }
      const fails = run % 4 === 0;
      await finishJob(
        env,
        job,
        fails
          ? {
              exitCode: 1,
              result: result('apply', 'failed', {
                error: { kind: 'step', step: 'apply', summary: 'Error: quota' },
              }),
            }
          : { exitCode: 0, result: result('apply', 'succeeded') },
      );
      await env.step()(ref);
    }
    await env.step()(ref);
    const jobs = await jobsOf(env, ref);
    const outcomes = jobs.map((job) => job.metadata?.annotations?.['captf.io/outcome']);
    expect(outcomes.filter((o) => o === 'succeeded').length).toBeLessThanOrEqual(3);
    expect(outcomes.filter((o) => o !== 'succeeded').length).toBeLessThanOrEqual(3);
    expect(jobs.map((job) => job.metadata?.name)).not.toContain(deletedByHand);
    const object = await readObject(env, ref);
    const secrets = await env.kube.reader.listSecrets({
      namespace: env.namespace,
      labelSelector: { 'captf.io/owner-uid': object.metadata.uid },
    });
    const runSecrets = secrets
      .map((secret) => secret.metadata?.name ?? '')
      .filter((name) => name.startsWith('captf-run-'));
    const liveJobs = new Set(jobs.map((job) => `captf-run-${job.metadata?.name}`));
    await eventually(
      async () =>
        (
          await env.kube.reader.listSecrets({
            namespace: env.namespace,
            labelSelector: { 'captf.io/owner-uid': object.metadata.uid },
          })
        ).filter((s) => s.metadata?.name?.startsWith('captf-run-') && !liveJobs.has(s.metadata?.name ?? '')),
      (orphans) => orphans.length === 0,
      30_000,
      'no orphaned per-run Secret',
    );
    expect(runSecrets.every((name) => liveJobs.has(name) || name === `captf-run-${deletedByHand}`)).toBe(
      true,
    );
    expect((await statusOf(env, ref)).lastRun?.attempt).toBeGreaterThanOrEqual(29);
    const interrupted = (await eventsOf(env, ref)).filter((e) => e.reason === 'JobInterrupted');
    expect(interrupted.map((e) => e.note)).toEqual([
      `Job ${deletedByHand} was deleted before it finished; the run is retried`,
    ]);
  });
});

describe('secrets', () => {
  it('C15: a token in a validation error appears nowhere in status, Events or step outcomes', async () => {
    const canary = 'tok-123-canary';
    await env.core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        metadata: { name: 'api-token', labels: { ...VARIABLES_SECRET_LABELS } },
        stringData: { token: canary },
      },
    });
    const ref = await createObject(env, 'TerraformMachine', 'm-c15', {
      variablesFrom: [{ name: 'api_token', secretKeyRef: { name: 'api-token', key: 'token' } }],
    });
    const outcomes: StepOutcome[] = [];
    const created = await stepUntil(env.step(), ref, 'created');
    outcomes.push(created);
    const runConfig = await env.kube.reader.getSecret(env.namespace, `captf-run-${created.job}`);
    const runJson = Buffer.from(runConfig?.data?.['run.json'] ?? '', 'base64').toString('utf8');
    expect(JSON.parse(runJson)).toMatchObject({
      variables: { api_token: canary },
      secretInputs: ['api_token'],
    });
    // A runner that failed to redact: the curated summary quotes the generated variables file.
    const leaky = result('apply', 'failed', {
      error: {
        kind: 'step',
        step: 'validate',
        summary: `Error: Invalid value on captf.auto.tfvars.json line 1: api_token = "${canary}"`,
      },
    });
    await finishJob(env, created.job ?? '', { exitCode: 1, result: leaky });
    outcomes.push(await env.step()(ref));
    outcomes.push(await env.step()(ref, { dryRun: true }));
    const status = await statusOf(env, ref);
    expect(JSON.stringify(status)).not.toContain(canary);
    expect(status.lastRun?.error?.summary).toContain('[redacted]');
    const events = await eventsOf(env, ref);
    expect(events.map((e) => e.reason)).toContain('StepFailed');
    expect(JSON.stringify(events)).not.toContain(canary);
    expect(JSON.stringify(outcomes)).not.toContain(canary);
    expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${created.job}`)).toBeUndefined();
  });
});
