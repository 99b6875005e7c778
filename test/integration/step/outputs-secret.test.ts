import { KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createSecret,
  createStepEnv,
  eventsOf,
  finishJob,
  jobsOf,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Issue 24 item 3 through the step, on the real API server: a start puts the empty outputs Secret in place,
// owned by the object, before the runner identity whose Role names it; bookkeeping records where the
// outputs went and the names the runner listed, never a value; a Secret of that name that is another's
// stops the start. The canary stands for a sensitive output the runner wrote into the Secret.

const CANARY = 'tok-123-canary';

/** The RBAC API as the admin (the step's adapter reads no Roles). */
function rbac(): RbacAuthorizationV1Api {
  const config = new KubeConfig();
  config.loadFromFile(testStack().kubeconfigPath);
  return config.makeApiClient(RbacAuthorizationV1Api);
}
let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('outputs');
});

afterAll(async () => {
  await env?.close();
});

describe('the outputs Secret through the step', () => {
  it('a start creates it owned by the object; bookkeeping records its name and the listed names, no value anywhere', async () => {
    const outcomes: StepOutcome[] = [];
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-out', {
      variables: { name: 'm-out' },
      outputs: { secretName: 'm-out-outputs' },
    });
    const object = await readObject(env, ref);
    const secret = await env.kube.reader.getSecret(env.namespace, 'm-out-outputs');
    expect(secret?.data).toBeUndefined();
    expect(secret?.metadata?.annotations?.['captf.io/outputs-writer']).toBe('captf-runner-m-m-out');
    expect(secret?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'TerraformMachine', uid: object.metadata.uid, controller: true }),
    ]);
    const role = await rbac().readNamespacedRole({ namespace: env.namespace, name: 'captf-runner-m-m-out' });
    expect(role.rules).toContainEqual(
      expect.objectContaining({ resourceNames: ['m-out-outputs'], verbs: ['get', 'update'] }),
    );
    const runConfig = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
    const runJson = JSON.parse(Buffer.from(runConfig?.data?.['run.json'] ?? '', 'base64').toString('utf8'));
    expect(runJson.outputsSecret).toEqual({ namespace: env.namespace, name: 'm-out-outputs' });
    // What the runner does in the Job: the values into the Secret, only the names into its result.
    await env.core.replaceNamespacedSecret({
      namespace: env.namespace,
      name: 'm-out-outputs',
      body: { ...secret, stringData: { admin_password: CANARY, endpoint: 'https://m-out.example.com' } },
    });
    await finishJob(env, job, {
      exitCode: 0,
      result: result('apply', 'succeeded', {
        steps: [
          { name: 'apply', exit: 0, seconds: 2 },
          { name: 'output', exit: 0, seconds: 0.4 },
        ],
        outputsSecret: { name: 'm-out-outputs', outputs: ['endpoint'] },
      }),
    });
    outcomes.push(await env.step()(ref));
    outcomes.push(await env.step()(ref, { dryRun: true }));
    const status = await statusOf(env, ref);
    expect(status.outputs).toEqual({ secretName: 'm-out-outputs', names: ['endpoint'] });
    expect(status.lastRun?.steps?.map((s) => s.name)).toEqual(['apply', 'output']);
    expect(JSON.stringify(status)).not.toContain(CANARY);
    expect(JSON.stringify(await eventsOf(env, ref))).not.toContain(CANARY);
    expect(JSON.stringify(outcomes)).not.toContain(CANARY);
    // Bookkeeping left the Secret as the runner wrote it.
    const kept = await env.kube.reader.getSecret(env.namespace, 'm-out-outputs');
    expect(Buffer.from(kept?.data?.admin_password ?? '', 'base64').toString()).toBe(CANARY);
  });

  it("a Secret of that name that is not the object's stops the start (WriteRefused): no Job, nothing granted", async () => {
    await createSecret(env, 'shared-credentials', { token: CANARY });
    const ref = await createObject(env, 'TerraformMachine', 'm-foreign', {
      variables: { name: 'm-foreign' },
      outputs: { secretName: 'shared-credentials' },
    });
    const outcome = await stepUntil(env.step(), ref, 'waiting');
    expect(outcome).toMatchObject({ reason: 'WriteRefused' });
    expect(outcome.message).toContain(
      "Secret shared-credentials (spec.outputs.secretName) exists and is not this object's",
    );
    expect(await jobsOf(env, ref)).toEqual([]);
    expect(await env.redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });
    // No Role was written for it, and the Secret is as it was.
    expect(
      await rbac()
        .readNamespacedRole({ namespace: env.namespace, name: 'captf-runner-m-m-foreign' })
        .catch(() => undefined),
    ).toBeUndefined();
    const untouched = await env.kube.reader.getSecret(env.namespace, 'shared-credentials');
    expect(untouched?.metadata?.ownerReferences).toBeUndefined();
    expect(JSON.stringify(await statusOf(env, ref))).not.toContain(CANARY);
  });
});
