import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import {
  createObject,
  createStepEnv,
  eventually,
  finishJob,
  patchSpec,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Issue 23 item 11 through the step, against the real API server, Job controller, Redis and Cluster API's
// own manager (which adopts the TerraformCluster its Cluster names and copies the endpoint once): a Cluster
// API cluster's spec.controlPlaneEndpoint is latched like a machine's providerID.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('cp-endpoint');
});

afterAll(async () => {
  await env?.close();
});

const ENDPOINT = { host: 'cp.demo.example', port: 6443 };
const MOVED = { host: 'cp2.demo.example', port: 6443 };
const INFRA_GROUP = CUSTOM_RESOURCES.TerraformCluster.group;

async function runConfigOf(job: string): Promise<Record<string, unknown>> {
  const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
  return JSON.parse(Buffer.from(secret?.data?.['run.json'] ?? '', 'base64').toString('utf8')) as Record<
    string,
    unknown
  >;
}

/** A Cluster API Cluster over the TerraformCluster `name`: Cluster API's manager adopts it. */
async function capiClusterOver(name: string): Promise<void> {
  await env.custom.createNamespacedCustomObject({
    group: 'cluster.x-k8s.io',
    version: 'v1beta2',
    plural: 'clusters',
    namespace: env.namespace,
    body: {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name },
      spec: { infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformCluster', name } },
    },
  });
}

describe('controlPlaneEndpoint under Cluster API', () => {
  it('a Cluster-owned TerraformCluster: the first apply sets it; the next run is told it and its refusal (ControlPlaneEndpointChange) leaves it as it was', async () => {
    const ref = await createObject(env, 'TerraformCluster', 'owned', { variables: { lb: 1 } });
    await capiClusterOver('owned');
    await eventually(
      () => readObject(env, ref),
      (object) => (object.metadata.ownerReferences ?? []).some((owner) => owner.kind === 'Cluster'),
      60_000,
      "Cluster API's owner reference on the TerraformCluster",
    );
    const first = await stepUntil(env.step(), ref, 'created');
    expect(await runConfigOf(first.job ?? '')).not.toHaveProperty('controlPlaneEndpoint');
    await finishJob(env, first.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs: { controlPlaneEndpoint: ENDPOINT } }),
    });
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    expect((await readObject(env, ref)).spec).toMatchObject({ controlPlaneEndpoint: ENDPOINT });

    // The module's inputs change (a new load balancer): the run is told the endpoint it may not move.
    await patchSpec(env, ref, { variables: { lb: 2 } });
    const second = await stepUntil(env.step(), ref, 'created');
    expect(await runConfigOf(second.job ?? '')).toMatchObject({ controlPlaneEndpoint: ENDPOINT });
    await finishJob(env, second.job ?? '', {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: {
          kind: 'step',
          step: 'show-json',
          summary: 'the plan would change the controlPlaneEndpoint of this cluster (cp.demo.example:6443)',
          reason: 'ControlPlaneEndpointChange',
        },
      }),
    });
    // Counted like ProviderIDChange: the object backs off, in case the inputs change back.
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'Backoff' });
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({
      job: second.job,
      result: 'failed',
      reason: 'ControlPlaneEndpointChange',
      error: { kind: 'step', step: 'show-json' },
    });
    expect((await readObject(env, ref)).spec).toMatchObject({ controlPlaneEndpoint: ENDPOINT });
  });

  it('a standalone TerraformCluster follows its module: its runs are not told the endpoint, and a new one is written', async () => {
    const { ref, job } = await startedObject(env, 'TerraformCluster', 'standalone', { variables: { lb: 1 } });
    await finishJob(env, job, {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs: { controlPlaneEndpoint: ENDPOINT } }),
    });
    await env.step()(ref);
    await patchSpec(env, ref, { variables: { lb: 2 } });
    const second = await stepUntil(env.step(), ref, 'created');
    expect(await runConfigOf(second.job ?? '')).not.toHaveProperty('controlPlaneEndpoint');
    await finishJob(env, second.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs: { controlPlaneEndpoint: MOVED } }),
    });
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    expect((await readObject(env, ref)).spec).toMatchObject({ controlPlaneEndpoint: MOVED });
  });
});
