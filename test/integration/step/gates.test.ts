import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import { FailpointAbort } from '../../../src/step/failpoints.ts';
import { parkedNode } from '../../env/parked-node.ts';
import {
  createObject,
  createStepEnv,
  eventsOf,
  expireStepLock,
  finishJob,
  jobsOf,
  patchAnnotations,
  patchSpec,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// The preamble, the gates of DESIGN.md section 5 step 5, the leases of step 6 (with the cluster/machine
// writer preference), the API guard of step 7, deletion, stuck Jobs and dry runs, through the step.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('gates');
});

afterAll(async () => {
  await env?.close();
});

const CLUSTER = { 'cluster.x-k8s.io/cluster-name': 'demo' };

async function markClusterReady(name: string): Promise<void> {
  const object = await readObject(env, { kind: 'TerraformCluster', namespace: env.namespace, name });
  expect(object.status).toMatchObject({ ready: true });
}

describe('leases: the cluster/machine writer preference', () => {
  it('a machine waits for the cluster apply (WaitingForClusterOperation); the cluster waits for machine applies (WaitingForMachineOperations) and keeps its leases', async () => {
    const cluster = await startedObject(
      env,
      'TerraformCluster',
      'demo',
      { variables: { v: 1 } },
      { labels: CLUSTER },
    );
    await finishJob(env, cluster.job, {
      exitCode: 0,
      result: result('apply', 'succeeded', {
        outputs: { controlPlaneEndpoint: { host: 'cp.demo', port: 6443 } },
      }),
    });
    await env.step()(cluster.ref);
    await markClusterReady('demo');
    expect((await readObject(env, cluster.ref)).spec).toMatchObject({
      controlPlaneEndpoint: { host: 'cp.demo', port: 6443 },
    });

    await patchSpec(env, cluster.ref, { variables: { v: 2 } });
    const clusterApply = await env.step()(cluster.ref);
    expect(clusterApply.action).toBe('created');

    const machine = await createObject(env, 'TerraformMachine', 'demo-m1', {}, { labels: CLUSTER });
    const waiting = await stepUntil(env.step(), machine, 'waiting');
    expect(waiting.reason).toBe('WaitingForClusterOperation');
    expect((await statusOf(env, machine)).waitReason).toBe('WaitingForClusterOperation');
    expect(await jobsOf(env, machine)).toEqual([]);

    await finishJob(env, clusterApply.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(cluster.ref);
    const machineApply = await env.step()(machine);
    expect(machineApply.action).toBe('created');

    await patchSpec(env, cluster.ref, { variables: { v: 3 } });
    const clusterWaits = await env.step()(cluster.ref);
    expect(clusterWaits).toMatchObject({ action: 'waiting', reason: 'WaitingForMachineOperations' });
    const clusterLease = await env.redis.client.get(env.redis.keys.leaseGroup(cluster.ref, 'demo').cluster);
    expect(clusterLease).toContain('captf-c-demo-apply-a3-');

    await finishJob(env, machineApply.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(machine);
    expect(await env.step()(cluster.ref)).toMatchObject({
      action: 'created',
      job: clusterLease?.split(' ')[1],
    });
  });
});

describe('gates', () => {
  it('Job slots: a full installation makes starts wait (WaitingForJobSlot); drift and refresh start only below 80 %', async () => {
    const slots = env.redis.keys.installationSlots();
    const farMs = Date.now() + 3_600_000;
    const fakes = ['a', 'b', 'c', 'd'].map((x) => `other/${x}`);
    for (const fake of fakes) await env.redis.client.zadd(slots, farMs, fake);
    try {
      const step = env.step({ config: { maxActiveJobs: 4 } });
      const ref = await createObject(env, 'TerraformMachine', 'm-slots');
      expect(await stepUntil(step, ref, 'waiting')).toMatchObject({ reason: 'WaitingForJobSlot' });
      await env.redis.client.zrem(slots, 'other/a');
      const roomy = env.step({ config: { maxActiveJobs: 5 } });
      const apply = await roomy(ref);
      expect(apply.action).toBe('created');
      await finishJob(env, apply.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
      await roomy(ref);
      // 4 of 5 slots taken by others: an apply could start, a drift check (80 % = 4) must wait.
      await env.redis.client.zadd(slots, farMs, 'other/a');
      env.clock.advance(2 * 3600);
      try {
        expect(await roomy(ref)).toMatchObject({ action: 'waiting', reason: 'WaitingForJobSlot' });
      } finally {
        env.clock.advance(-2 * 3600);
      }
    } finally {
      await env.redis.client.zrem(slots, ...fakes);
    }
  });

  it('policy validity: a machine lock timeout not below the cluster default deadline waits with JobPolicyInvalid for 10 min', async () => {
    const labels = { 'cluster.x-k8s.io/cluster-name': 'strict' };
    await createObject(
      env,
      'TerraformCluster',
      'strict',
      { defaults: { jobs: { activeDeadlineSeconds: 300 } } },
      { labels, annotations: { 'cluster.x-k8s.io/managed-by': 'someone' } },
    );
    // Its infrastructure is there (the dependency gate comes first), written as its own controller would.
    const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
    await env.custom.patchNamespacedCustomObjectStatus(
      {
        ...CUSTOM_RESOURCES.TerraformCluster,
        namespace: env.namespace,
        name: 'strict',
        body: { status: { ready: true } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const ref = await createObject(
      env,
      'TerraformMachine',
      'm-policy',
      { jobs: { lockTimeoutSeconds: 600 } },
      { labels },
    );
    const outcome = await stepUntil(env.step(), ref, 'waiting');
    expect(outcome).toMatchObject({ reason: 'JobPolicyInvalid', requeueAfterSeconds: 600 });
    expect(outcome.message).toContain('lockTimeoutSeconds');
    expect((await statusOf(env, ref)).waitReason).toBe('JobPolicyInvalid');
  });

  it('Cluster API pause: a finished Job is still bookkept, nothing new starts (Paused)', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-paused');
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', { error: { kind: 'step', step: 'apply', summary: 'Error: boom' } }),
    });
    await patchAnnotations(env, ref, { 'cluster.x-k8s.io/paused': '' });
    env.clock.advance(3600);
    try {
      const outcome = await env.step()(ref);
      expect(outcome).toMatchObject({ action: 'bookkept', reason: 'Paused' });
      expect((await statusOf(env, ref)).lastRun).toMatchObject({ job, result: 'failed' });
      expect(await jobsOf(env, ref)).toHaveLength(1);
    } finally {
      env.clock.advance(-3600);
    }
  });

  it('Cluster API pause holds a deletion with nothing to destroy too: the finalizer stays (Paused) until the pause is lifted', async () => {
    const ref = await createObject(
      env,
      'TerraformMachine',
      'm-paused-delete',
      {},
      { annotations: { 'cluster.x-k8s.io/paused': '' } },
    );
    await stepUntil(env.step(), ref, 'waiting');
    expect((await statusOf(env, ref)).waitReason).toBe('Paused');
    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES.TerraformMachine,
      namespace: env.namespace,
      name: ref.name,
    });
    expect(await env.step()(ref)).toMatchObject({ action: 'waiting', reason: 'Paused' });
    const held = await readObject(env, ref);
    expect(held.metadata.deletionTimestamp).toBeDefined();
    expect(held.metadata.finalizers).toContain(FINALIZER);
    expect(await jobsOf(env, ref)).toEqual([]);
    await patchAnnotations(env, ref, { 'cluster.x-k8s.io/paused': null });
    expect(await env.step()(ref)).toMatchObject({ action: 'finalized', reason: 'DeletingWithoutState' });
    expect(await env.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name)).toBeUndefined();
  });

  it('externally managed objects are left alone: no finalizer, no Job', async () => {
    const ref = await createObject(
      env,
      'TerraformMachine',
      'm-external',
      {},
      { annotations: { 'cluster.x-k8s.io/managed-by': 'other-provider' } },
    );
    expect(await env.step()(ref)).toMatchObject({ action: 'none', reason: 'ExternallyManaged' });
    expect((await readObject(env, ref)).metadata.finalizers).toBeUndefined();
    expect(await jobsOf(env, ref)).toEqual([]);
  });

  it('API guard: a live pod of an earlier attempt holds the next start back (WaitingForPreviousAttempt), whatever Redis says', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-guard');
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    const object = await readObject(env, ref);
    await env.core.createNamespacedPod({
      namespace: env.namespace,
      body: {
        metadata: {
          name: `${job}-straggler`,
          labels: { 'captf.io/owner-uid': object.metadata.uid, 'job-name': job },
        },
        spec: {
          nodeName: await parkedNode(env.core),
          containers: [{ name: 'source', image: 'example.invalid/x:1' }],
        },
      },
    });
    await patchSpec(env, ref, { variables: { again: true } });
    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForPreviousAttempt' });
    expect(outcome.message).toContain(`${job}-straggler`);
    expect(await jobsOf(env, ref)).toHaveLength(1);
    expect(await env.redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });
  });
});

describe('rejected creates', () => {
  it('a Job create the API server rejects (422) proves no Job exists: the leases and slots are given back', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-rejected', {
      jobs: { nodeSelector: { 'not a/valid/label key': 'x' } },
    });
    const outcome = await stepUntil(env.step(), ref, 'waiting');
    expect(outcome).toMatchObject({ reason: 'WriteRefused' });
    expect((await statusOf(env, ref)).waitReason).toBe('WriteRefused');
    expect(outcome.message).toContain('Invalid');
    expect(await jobsOf(env, ref)).toEqual([]);
    expect(await env.redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });
    expect(
      await env.redis.client.zscore(env.redis.keys.installationSlots(), `${env.namespace}/${outcome.job}`),
    ).toBeNull();
  });
});

describe('deletion, stuck Jobs, dry runs', () => {
  it('deleting an applied object runs destroy, then drops the finalizer; an object never applied goes at once', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-delete');
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES.TerraformMachine,
      namespace: env.namespace,
      name: ref.name,
    });
    const destroy = await env.step()(ref);
    expect(destroy).toMatchObject({ action: 'created', reason: 'Deleting' });
    await finishJob(env, destroy.job ?? '', { exitCode: 0, result: result('destroy', 'succeeded') });
    await env.step()(ref);
    expect(await env.step()(ref)).toMatchObject({ action: 'gone' });

    const fresh = await createObject(env, 'TerraformMachine', 'm-delete-fresh');
    await env.step()(fresh);
    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES.TerraformMachine,
      namespace: env.namespace,
      name: fresh.name,
    });
    expect(await env.step()(fresh)).toMatchObject({ action: 'finalized', reason: 'DeletingWithoutState' });
    expect(await env.step()(fresh)).toMatchObject({ action: 'gone' });
  });

  it('a Job stuck over 1 min without its per-run Secret (inputs moved on) is deleted (StuckJobDeleted) and replaced', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-stuck', { variables: { v: 1 } });
    await stepUntil(env.step(), ref, 'none');
    await expect(env.step({ failpoints: ['after-job-create'] })(ref)).rejects.toBeInstanceOf(FailpointAbort);
    await expireStepLock(env, ref);
    const [stuck] = await jobsOf(env, ref);
    await patchSpec(env, ref, { variables: { v: 2 } });
    env.clock.advance(61);
    try {
      expect(await env.step()(ref)).toMatchObject({
        action: 'waiting',
        reason: 'StuckJobDeleted',
        job: stuck?.metadata?.name,
      });
    } finally {
      env.clock.advance(-61);
    }
    expect((await eventsOf(env, ref)).map((e) => e.reason)).toContain('StuckJobDeleted');
    const next = await stepUntil(env.step(), ref, 'created');
    expect(next.job).not.toBe(stuck?.metadata?.name);
  });

  it('a dry run explains the decision and writes nothing', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-dry');
    const before = await readObject(env, ref);
    const outcome = await env.step()(ref, { dryRun: true });
    expect(outcome.message).toContain('dry run');
    expect((await readObject(env, ref)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    await stepUntil(env.step(), ref, 'none');
    const explained = await env.step()(ref, { dryRun: true });
    expect(explained).toMatchObject({ reason: 'NoState' });
    expect(explained.message).toContain('would start apply');
    expect(await jobsOf(env, ref)).toEqual([]);
  });
});
