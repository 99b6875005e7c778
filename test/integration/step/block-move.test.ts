import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { BLOCK_MOVE_ANNOTATION } from '../../../src/core/block-move.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { FailpointAbort } from '../../../src/step/failpoints.ts';
import {
  createStepEnv,
  eventsOf,
  eventually,
  expireStepLock,
  finishJob,
  patchAnnotations,
  readObject,
  result,
  type StepEnv,
  startedObject,
  stepUntil,
} from './harness.ts';

// Issue 23 item 6, against the real API server: Cluster API's move contract. `clusterctl move` waits while
// an object it moves carries `clusterctl.cluster.x-k8s.io/block-move`; ours carries it from just before its
// Job is created until the step that bookkeeps that Job, and a step whose object already carries what it
// should writes no metadata.

const MOVE_LABEL = 'clusterctl.cluster.x-k8s.io/move';

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('block-move');
});

afterAll(async () => {
  await env?.close();
});

async function annotations(ref: ObjectRef): Promise<Record<string, string>> {
  return (await readObject(env, ref)).metadata.annotations ?? {};
}

/** The metadata patches of our object one step sends (the status subresource's are counted apart). */
async function metadataPatchesOf(ref: ObjectRef): Promise<number> {
  env.kube.takeRequestCounts();
  await env.step({ shadow: false })(ref);
  const counts = env.kube.takeRequestCounts();
  return counts.byRequest[`patch ${CUSTOM_RESOURCES[ref.kind].plural}`] ?? 0;
}

describe('clusterctl.cluster.x-k8s.io/block-move', () => {
  it('is there while the Job runs (and put back when removed), and gone once the Job is bookkept', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-move');
    expect(await annotations(ref)).toHaveProperty([BLOCK_MOVE_ANNOTATION], '');

    // Watching the running Job: the object says so already, so no metadata write.
    expect(await metadataPatchesOf(ref)).toBe(0);
    expect(await annotations(ref)).toHaveProperty([BLOCK_MOVE_ANNOTATION], '');

    // A person (or a release before this one) left a running Job without it: the next step puts it back.
    await patchAnnotations(env, ref, { [BLOCK_MOVE_ANNOTATION]: null });
    expect(await metadataPatchesOf(ref)).toBe(1);
    expect(await annotations(ref)).toHaveProperty([BLOCK_MOVE_ANNOTATION], '');

    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    expect(await stepUntil(env.step(), ref, 'bookkept')).toMatchObject({ job });
    expect(await annotations(ref)).not.toHaveProperty([BLOCK_MOVE_ANNOTATION]);

    // At rest: nothing to write.
    expect(await metadataPatchesOf(ref)).toBe(0);
    expect(await annotations(ref)).not.toHaveProperty([BLOCK_MOVE_ANNOTATION]);
  });

  it('a Cluster paused by clusterctl move: the running Job is bookkept and the annotation goes; nothing new starts and none comes back', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-paused-move');
    expect(await annotations(ref)).toHaveProperty([BLOCK_MOVE_ANNOTATION], '');
    // What `clusterctl move` does first: pause. The Job cannot be paused; the move waits for it.
    await patchAnnotations(env, ref, { 'cluster.x-k8s.io/paused': '' });
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    expect(await stepUntil(env.step(), ref, 'bookkept')).toMatchObject({ job });
    expect(await annotations(ref)).not.toHaveProperty([BLOCK_MOVE_ANNOTATION]);

    // A change while paused starts nothing, so nothing blocks the move again.
    await env.custom.patchNamespacedCustomObject(
      {
        ...CUSTOM_RESOURCES.TerraformMachine,
        namespace: env.namespace,
        name: ref.name,
        body: { spec: { variables: { size: 'large' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(await env.step()(ref)).toMatchObject({ action: 'waiting', reason: 'Paused' });
    expect(await annotations(ref)).not.toHaveProperty([BLOCK_MOVE_ANNOTATION]);
  });
});

describe('the state Secret of an object Cluster API owns (clusterctl.cluster.x-k8s.io/move)', () => {
  it('gets the move label when Cluster API set the owner after the first apply began, also when the step dies right after labelling (after-state-label)', async () => {
    const { ref, job } = await startedObject(env, 'TerraformCluster', 'c-late-owner');
    const stateName = 'tfstate-default-c-c-late-owner';
    const before = await env.kube.reader.getSecret(env.namespace, stateName);
    expect(before?.metadata?.labels).not.toHaveProperty([MOVE_LABEL]);
    // Cluster API sets the owner while the Job runs: the Secret the controller made before is unlabelled.
    await env.custom.createNamespacedCustomObject({
      group: 'cluster.x-k8s.io',
      version: 'v1beta2',
      plural: 'clusters',
      namespace: env.namespace,
      body: {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Cluster',
        metadata: { name: 'c-late-owner', namespace: env.namespace },
        spec: {
          infrastructureRef: {
            apiGroup: 'infrastructure.cluster.x-k8s.io',
            kind: 'TerraformCluster',
            name: 'c-late-owner',
          },
        },
      },
    });
    await eventually(
      async () => (await readObject(env, ref)).metadata.ownerReferences ?? [],
      (owners) => owners.some((owner) => owner.kind === 'Cluster'),
      60_000,
      'Cluster API owning the TerraformCluster',
    );
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    // The bookkeeping step dies right after the label (the fault suite's plain machines never reach this
    // point: only an object Cluster API owns is labelled); the next step finishes the bookkeeping once.
    const crashed = await env
      .step({ failpoints: ['after-state-label'] })(ref)
      .then(
        () => 'stepped',
        (error: unknown) => (error instanceof FailpointAbort ? 'crashed' : Promise.reject(error)),
      );
    expect(crashed).toBe('crashed');
    await expireStepLock(env, ref);
    await stepUntil(env.step(), ref, 'none');
    expect((await eventsOf(env, ref)).filter((event) => event.reason === 'JobSucceeded')).toHaveLength(1);
    const after = await env.kube.reader.getSecret(env.namespace, stateName);
    expect(after?.metadata?.labels).toHaveProperty([MOVE_LABEL], '');
    // Only the label was added: OpenTofu's own labels stay.
    expect(after?.metadata?.labels).toMatchObject({ tfstate: 'true', tfstateSecretSuffix: 'c-c-late-owner' });
  });
});
