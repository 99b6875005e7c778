import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { VARIABLES_SECRET_LABELS } from '../../../src/core/variables-opt-in.ts';
import {
  createObject,
  createSecret,
  createStepEnv,
  eventsOf,
  finishJob,
  jobsOf,
  patchSpec,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Issue 16 item 1 on the real API server: `variablesFrom` and `env[].valueFrom` read only Secrets labelled
// captf.io/variables=true. A hostile object referencing any other Secret starts nothing, waits with a
// reason naming the Secret and the label, gets one Warning Event, and loses nothing already recorded;
// labelling the Secret lets the next step (the wait's requeue) start the run.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('optin');
});

afterAll(async () => {
  await env?.close();
});

async function labelSecret(name: string): Promise<void> {
  await env.core.patchNamespacedSecret(
    { namespace: env.namespace, name, body: { metadata: { labels: { ...VARIABLES_SECRET_LABELS } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

const LABEL = 'captf.io/variables=true';

describe('I16.1 opt-in Secrets for variables', () => {
  it('a variable from an unlabelled Secret: no Job, VariablesSecretNotOptedIn naming it, one Event, status kept; labelled, it runs', async () => {
    await createSecret(env, 'team-vars', { size: '"small"' }, { ...VARIABLES_SECRET_LABELS });
    await createSecret(env, 'someone-elses', { token: 'tok-unlabelled-canary' });
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-vars', {
      variablesFrom: [{ name: 'size', secretKeyRef: { name: 'team-vars', key: 'size' } }],
    });
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    const applied = await statusOf(env, ref);
    expect(applied.lastRun).toMatchObject({ job, result: 'succeeded' });

    // The hostile change: read another team's Secret into a variable.
    await patchSpec(env, ref, {
      variablesFrom: [{ name: 'size', secretKeyRef: { name: 'someone-elses', key: 'token' } }],
    });
    const held = await stepUntil(env.step(), ref, 'waiting');
    expect(held).toMatchObject({ reason: 'VariablesSecretNotOptedIn' });
    // Labelling the Secret is its event (src/core/wake.ts): the requeue is only the safety net.
    expect(held.requeueAfterSeconds).toBeGreaterThanOrEqual(600);
    expect(held.message).toContain('Secret someone-elses (variable size)');
    expect(held.message).toContain(LABEL);
    expect(await jobsOf(env, ref)).toHaveLength(1);
    const waiting = await statusOf(env, ref);
    expect(waiting.waitReason).toBe('VariablesSecretNotOptedIn');
    expect(waiting.activeJob).toBeUndefined();
    // Nothing recorded is lost: the last run, the last success, the applied inputs, the attempts.
    for (const field of ['lastRun', 'lastSuccess', 'appliedInputsHash', 'attempts', 'ready'] as const)
      expect(waiting[field]).toEqual(applied[field]);
    const condition = waiting.conditions?.find((c) => c.reason === 'VariablesSecretNotOptedIn');
    expect(condition?.message).toContain('someone-elses');
    expect(JSON.stringify(waiting)).not.toContain('tok-unlabelled-canary');

    // Another step of the same wait: no second Event, no Job.
    expect(await env.step()(ref)).toMatchObject({ action: 'waiting', reason: 'VariablesSecretNotOptedIn' });
    const events = (await eventsOf(env, ref)).filter((e) => e.reason === 'VariablesSecretNotOptedIn');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'Warning', action: 'CreateJob' });
    expect(events[0]?.note).toContain('someone-elses');
    expect(events[0]?.note).toContain(LABEL);
    expect(await jobsOf(env, ref)).toHaveLength(1);

    // The owner opts the Secret in: the next step starts the run with it.
    await labelSecret('someone-elses');
    const created = await stepUntil(env.step(), ref, 'created');
    expect(created.reason).toBe('InputsChanged');
    const runConfig = await env.kube.reader.getSecret(env.namespace, `captf-run-${created.job}`);
    const runJson = Buffer.from(runConfig?.data?.['run.json'] ?? '', 'base64').toString('utf8');
    expect(JSON.parse(runJson)).toMatchObject({ variables: { size: 'tok-unlabelled-canary' } });
  });

  it('an env value from an unlabelled Secret: no Job until the Secret is labelled', async () => {
    await createSecret(env, 'provider-creds', { key: 'AKIA-canary' });
    const ref = await createObject(env, 'TerraformMachine', 'm-env', {
      jobs: {
        env: [
          {
            name: 'AWS_SECRET_ACCESS_KEY',
            valueFrom: { secretKeyRef: { name: 'provider-creds', key: 'key' } },
          },
        ],
      },
    });
    const held = await stepUntil(env.step(), ref, 'waiting');
    expect(held).toMatchObject({ reason: 'VariablesSecretNotOptedIn' });
    expect(held.message).toContain('Secret provider-creds (env AWS_SECRET_ACCESS_KEY)');
    expect(await jobsOf(env, ref)).toEqual([]);
    expect((await statusOf(env, ref)).waitReason).toBe('VariablesSecretNotOptedIn');
    expect((await eventsOf(env, ref)).map((e) => e.reason)).toContain('VariablesSecretNotOptedIn');

    await labelSecret('provider-creds');
    const created = await stepUntil(env.step(), ref, 'created');
    const [job] = await jobsOf(env, ref);
    expect(job?.metadata?.name).toBe(created.job);
  });

  it("an env value from the owning cluster's defaults is held to the same label", async () => {
    await createSecret(env, 'cluster-creds', { key: 'cluster-canary' });
    const labels = { 'cluster.x-k8s.io/cluster-name': 'optin' };
    await createObject(
      env,
      'TerraformCluster',
      'optin',
      {
        defaults: {
          jobs: {
            env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'cluster-creds', key: 'key' } } }],
          },
        },
      },
      { labels, annotations: { 'cluster.x-k8s.io/managed-by': 'someone' } },
    );
    // Its infrastructure is there (the dependency gate comes first), written as its own controller would.
    await env.custom.patchNamespacedCustomObjectStatus(
      {
        ...CUSTOM_RESOURCES.TerraformCluster,
        namespace: env.namespace,
        name: 'optin',
        body: { status: { ready: true } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const ref = await createObject(env, 'TerraformMachine', 'm-defaults', {}, { labels });
    const held = await stepUntil(env.step(), ref, 'waiting');
    expect(held).toMatchObject({ reason: 'VariablesSecretNotOptedIn' });
    expect(held.message).toContain('Secret cluster-creds (env TOKEN)');
    await labelSecret('cluster-creds');
    expect(await stepUntil(env.step(), ref, 'created')).toMatchObject({ action: 'created' });
  });

  it('the backend Secret needs no label (it is the installation configuration, not a variable)', async () => {
    await createSecret(env, 'backend-plain', { namespace: 'state' });
    const { job } = await startedObject(env, 'TerraformMachine', 'm-backend', {
      backend: { secretRef: { name: 'backend-plain' } },
    });
    expect(job).toBeTruthy();
  });
});
