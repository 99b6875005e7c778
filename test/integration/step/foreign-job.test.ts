import { PatchStrategy, setHeaderOptions, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { ANNOTATIONS } from '../../../src/core/job-labels.ts';
import { jobName } from '../../../src/core/names.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import { FailpointAbort } from '../../../src/step/failpoints.ts';
import {
  createObject,
  createStepEnv,
  eventsOf,
  eventually,
  expireStepLock,
  finishJob,
  jobsOf,
  podOf,
  readObject,
  result,
  runPod,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Issue 23 item 1 (DESIGN.md section 5 step 8): an object deleted without its Jobs (orphan cascade, then
// its finalizer removed, as a restore or a botched move leaves it) and created again under the same name
// computes its predecessor's Job names. A running predecessor's Job is waited for; a finished one never
// goes (our Jobs have no TTL), so it is passed over and the next attempt starts.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('foreign');
});

afterAll(async () => {
  await env?.close();
});

const SPEC = { variables: { size: 'small' } };

/**
 * Deletes the object as `kubectl delete --cascade=orphan` does, then removes our finalizer by hand, and
 * waits until it is gone: the garbage collector has orphaned its Jobs (they keep their labels).
 */
async function deleteLeavingJobs(ref: ObjectRef): Promise<void> {
  const resource = { ...CUSTOM_RESOURCES[ref.kind], namespace: ref.namespace, name: ref.name };
  await env.custom.deleteNamespacedCustomObject({ ...resource, propagationPolicy: 'Orphan' });
  // Ours only once the garbage collector is done orphaning: removing its `orphan` finalizer too would let
  // the collector delete the Jobs as dependents of an owner that is gone.
  const deleting = await eventually(
    () => readObject(env, ref),
    (object) => !(object.metadata.finalizers ?? []).includes('orphan'),
    30_000,
    `${ref.name} orphaned its dependents`,
  );
  const finalizers = (deleting.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
  await env.custom.patchNamespacedCustomObject(
    { ...resource, body: { metadata: { finalizers } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await eventually(
    () => env.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name),
    (object) => object === undefined,
    30_000,
    `${ref.name} gone`,
  );
}

async function readJob(name: string): Promise<V1Job> {
  return env.batch.readNamespacedJob({ namespace: env.namespace, name });
}

/** Creates the object again under the same name and spec; answers its ref and new UID. */
async function recreated(name: string): Promise<{ ref: ObjectRef; uid: string }> {
  const ref = await createObject(env, 'TerraformMachine', name, SPEC);
  return { ref, uid: (await readObject(env, ref)).metadata.uid };
}

/** The JobCreated notes of the object with `uid` (its predecessor's Events share its name). */
async function jobCreatedNotes(ref: ObjectRef, uid: string): Promise<string[]> {
  return (await eventsOf(env, ref))
    .filter((event) => event.regarding?.uid === uid && event.reason === 'JobCreated')
    .map((event) => event.note ?? '');
}

/** The Job's run ends in success, the step records it, and the object is Ready and up to date. */
async function convergesReady(ref: ObjectRef, job: string): Promise<void> {
  await finishJob(env, job, {
    exitCode: 0,
    result: result('apply', 'succeeded', { outputs: { providerID: `demo://${ref.name}` } }),
  });
  expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded', job });
  expect(await statusOf(env, ref)).toMatchObject({
    ready: true,
    lastRun: { job, attempt: 2, result: 'succeeded' },
  });
  expect(await env.step()(ref)).toMatchObject({ action: 'none', reason: 'UpToDate' });
}

describe("a predecessor's Job under the same name", () => {
  it('F1 finished: the re-created object passes it over at once and starts attempt 2, which converges Ready', async () => {
    const { ref, job: predecessor } = await startedObject(env, 'TerraformMachine', 'fj-done', SPEC);
    await finishJob(env, predecessor, { exitCode: 0, result: result('apply', 'succeeded') });
    await stepUntil(env.step(), ref, 'none');
    await deleteLeavingJobs(ref);
    expect((await readJob(predecessor)).metadata?.ownerReferences ?? []).toEqual([]);

    const { ref: again, uid } = await recreated('fj-done');
    const created = await stepUntil(env.step(), again, 'created');
    expect(created.reason).toBe('NoState');
    const inputsHash = (await readJob(predecessor)).metadata?.annotations?.[ANNOTATIONS.inputsHash] ?? '';
    const name = { kind: 'TerraformMachine', name: 'fj-done', op: 'apply', inputsHash, tick: '' } as const;
    expect(predecessor).toBe(jobName({ ...name, attempt: 1 }));
    expect(created.job).toBe(jobName({ ...name, attempt: 2 }));
    const jobs = await jobsOf(env, again);
    expect(jobs.map((j) => j.metadata?.name)).toEqual([created.job]);
    expect(jobs[0]?.metadata?.labels?.['captf.io/attempt']).toBe('2');
    const status = await statusOf(env, again);
    expect(status.activeJob).toMatchObject({ name: created.job, attempt: 2 });
    expect(status.waitReason).toBe('JobActive');
    const [note] = await jobCreatedNotes(again, uid);
    expect(note).toContain(`skipped ${predecessor}`);
    // The predecessor's Job is left as it was: it is not ours to delete.
    expect((await readJob(predecessor)).metadata?.deletionTimestamp).toBeUndefined();

    await convergesReady(again, created.job ?? '');
  });

  it('F2 running: the re-created object waits for it (WaitingForForeignJob), and once it finished starts attempt 2', async () => {
    const { ref, job: predecessor } = await startedObject(env, 'TerraformMachine', 'fj-running', SPEC);
    const pod = await podOf(env, predecessor);
    await runPod(env, pod);
    await deleteLeavingJobs(ref);

    const { ref: again } = await recreated('fj-running');
    const waiting = await stepUntil(env.step(), again, 'waiting');
    expect(waiting).toMatchObject({ reason: 'WaitingForForeignJob', job: predecessor });
    expect(await env.step()(again)).toMatchObject({ reason: 'WaitingForForeignJob' });
    expect(await jobsOf(env, again)).toEqual([]);
    expect(await statusOf(env, again)).toMatchObject({ waitReason: 'WaitingForForeignJob' });

    await finishJob(env, predecessor, { exitCode: 0, result: result('apply', 'succeeded') });
    const created = await env.step()(again);
    expect(created).toMatchObject({ action: 'created', reason: 'NoState' });
    expect(created.job).toMatch(/-apply-a2-[0-9a-f]{6}$/);
    expect((await jobsOf(env, again)).map((j) => j.metadata?.name)).toEqual([created.job]);

    await convergesReady(again, created.job ?? '');
  });

  it('F3 a crash right after the attempt-2 Job is created: the next step adopts it, one Job of ours', async () => {
    const { ref, job: predecessor } = await startedObject(env, 'TerraformMachine', 'fj-crash', SPEC);
    await finishJob(env, predecessor, { exitCode: 1, result: result('apply', 'failed') });
    await deleteLeavingJobs(ref);

    const { ref: again, uid } = await recreated('fj-crash');
    expect(await env.step()(again)).toMatchObject({ reason: 'FinalizerAdded' });
    await expect(env.step({ failpoints: ['after-job-create'] })(again)).rejects.toBeInstanceOf(
      FailpointAbort,
    );
    await expireStepLock(env, again);
    const [crashed] = await jobsOf(env, again);
    expect(crashed?.metadata?.labels?.['captf.io/attempt']).toBe('2');
    expect((await statusOf(env, again)).activeJob).toBeUndefined();

    const adopted = await env.step()(again);
    expect(adopted).toMatchObject({ action: 'watching', reason: 'JobActive', job: crashed?.metadata?.name });
    const jobs = await jobsOf(env, again);
    expect(jobs.map((j) => j.metadata?.name)).toEqual([crashed?.metadata?.name]);
    expect(jobs[0]?.metadata?.labels?.['captf.io/owner-uid']).toBe(uid);
    expect(
      await env.kube.reader.getSecret(env.namespace, `captf-run-${crashed?.metadata?.name}`),
    ).toBeDefined();
    expect((await statusOf(env, again)).activeJob).toMatchObject({
      name: crashed?.metadata?.name,
      attempt: 2,
    });

    await convergesReady(again, crashed?.metadata?.name ?? '');
    expect((await jobsOf(env, again)).length).toBe(1);
  });
});
