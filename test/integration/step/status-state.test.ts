import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { ACCEPT_EMPTY_STATE_ANNOTATION } from '../../../src/core/state-evidence.ts';
import {
  createObject,
  createStepEnv,
  eventsOf,
  finishJob,
  jobsOf,
  patchSpec,
  readObject,
  refuseJobs,
  result,
  type StepEnv,
  startedObject,
  stepUntil,
  tfstate,
  writeState,
} from './harness.ts';

// Issue 23 items 4 and 5 on the real API server, Job controller and Redis: a status the release cannot read
// stops the object without losing a field, and a provisioned object whose state is gone does not apply from
// nothing; a deleting object whose status lost its apply destroys what its state holds.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('statestate');
});

afterAll(async () => {
  await env?.close();
});

async function mergePatch(ref: ObjectRef, body: Record<string, unknown>, status = false): Promise<void> {
  const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
  const target = { ...CUSTOM_RESOURCES[ref.kind], namespace: ref.namespace, name: ref.name, body };
  const header = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  if (status) await env.custom.patchNamespacedCustomObjectStatus(target, header);
  else await env.custom.patchNamespacedCustomObject(target, header);
}

/** A machine applied once (the played backend leaves a resource in its state); returns its ref. */
async function appliedMachine(name: string): Promise<ObjectRef> {
  const { ref, job } = await startedObject(env, 'TerraformMachine', name, { variables: { n: 1 } });
  await finishJob(env, job, {
    exitCode: 0,
    result: result('apply', 'succeeded', { outputs: { providerID: `demo://${name}` } }),
  });
  await stepUntil(env.step(), ref, 'bookkept');
  return ref;
}

async function rawStatus(ref: ObjectRef): Promise<Record<string, unknown>> {
  return ((await readObject(env, ref)).status ?? {}) as Record<string, unknown>;
}

describe('a status that does not parse (StatusUnreadable)', () => {
  it('waits with the field named, starts no Job, keeps every field; fixing the field converges', async () => {
    const ref = await appliedMachine('m-unreadable');
    const before = await rawStatus(ref);
    expect(before.stateSuffix).toBe('m-m-unreadable');
    // Valid RFC 3339 for the API server, not for the schema: as an older release or a person may write it.
    const lastRun = before.lastRun as Record<string, unknown>;
    await mergePatch(ref, { status: { lastRun: { startedAt: '2026-11-29T13:00:00+02:00' } } }, true);
    await patchSpec(env, ref, { variables: { n: 2 } });
    const jobsBefore = (await jobsOf(env, ref)).length;

    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'waiting', reason: 'StatusUnreadable' });
    expect(outcome.message).toContain('lastRun.startedAt');
    expect(outcome.message).not.toContain('+02:00');
    expect((await jobsOf(env, ref)).length).toBe(jobsBefore);
    const waiting = await rawStatus(ref);
    expect(waiting).toMatchObject({
      waitReason: 'StatusUnreadable',
      stateSuffix: before.stateSuffix,
      lastSuccess: before.lastSuccess,
      appliedInputsHash: before.appliedInputsHash,
      attempts: before.attempts,
      lastRun: { ...lastRun, startedAt: '2026-11-29T13:00:00+02:00' },
    });
    const ready = (waiting.conditions as { type: string; reason: string; message: string }[]).find(
      (c) => c.type === 'Ready',
    );
    expect(ready).toMatchObject({ reason: 'StatusUnreadable' });
    expect(ready?.message).toContain('lastRun.startedAt');
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'StatusUnreadable')).toHaveLength(1);

    // The same wait again: nothing is written, no second Event.
    const version = (await readObject(env, ref)).metadata.resourceVersion;
    expect((await env.step()(ref)).reason).toBe('StatusUnreadable');
    expect((await readObject(env, ref)).metadata.resourceVersion).toBe(version);
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'StatusUnreadable')).toHaveLength(1);

    // A person fixes the field: the apply of the changed inputs starts, on the recorded state.
    await mergePatch(ref, { status: { lastRun: { startedAt: lastRun.startedAt } } }, true);
    const created = await stepUntil(env.step(), ref, 'created');
    const job = (await jobsOf(env, ref)).find((j) => j.metadata?.name === created.job);
    expect(job?.metadata?.annotations?.['captf.io/state-suffix']).toBe(before.stateSuffix);
  });
});

describe('a provisioned object whose state is gone (StateMissing)', () => {
  it('waits without a Job while the state Secret is missing; the annotation starts the apply and is spent', async () => {
    const ref = await appliedMachine('m-lost');
    // A restore without its Secrets: the state is gone, the object says it was provisioned.
    await env.core.deleteNamespacedSecret({ namespace: env.namespace, name: 'tfstate-default-m-m-lost' });
    await patchSpec(env, ref, { variables: { n: 2 } });
    const jobsBefore = (await jobsOf(env, ref)).length;

    const dry = await env.step({ shadow: false })(ref, { dryRun: true });
    expect(dry.reason).toBe('StateMissing');
    expect(dry.message).toContain('tfstate-default-m-m-lost');
    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'waiting', reason: 'StateMissing' });
    expect(outcome.message).toContain(ACCEPT_EMPTY_STATE_ANNOTATION);
    expect((await jobsOf(env, ref)).length).toBe(jobsBefore);
    expect((await rawStatus(ref)).waitReason).toBe('StateMissing');
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'StateMissing')).toHaveLength(1);

    await mergePatch(ref, { metadata: { annotations: { [ACCEPT_EMPTY_STATE_ANNOTATION]: 'true' } } });
    const created = await stepUntil(env.step(), ref, 'created');
    expect(created.reason).toBe('InputsChanged');
    expect(
      (await readObject(env, ref)).metadata.annotations?.[ACCEPT_EMPTY_STATE_ANNOTATION],
    ).toBeUndefined();
    // The runner may only get and update its state: the start put the empty Secret back before the Job.
    const restored = await env.core.readNamespacedSecret({
      namespace: env.namespace,
      name: 'tfstate-default-m-m-lost',
    });
    expect(restored.data?.tfstate).toBeUndefined();
  });

  it('a start from the lost state that the API server refuses gives the consent back; the next start spends it', async () => {
    const ref = await appliedMachine('m-lost-refused');
    await env.core.deleteNamespacedSecret({
      namespace: env.namespace,
      name: 'tfstate-default-m-m-lost-refused',
    });
    await patchSpec(env, ref, { variables: { n: 2 } });
    expect((await env.step()(ref)).reason).toBe('StateMissing');
    // No Job may be created in the namespace (a quota): the start is refused after it spent the consent.
    const quota = await refuseJobs(env);
    try {
      await mergePatch(ref, { metadata: { annotations: { [ACCEPT_EMPTY_STATE_ANNOTATION]: 'true' } } });
      const jobsBefore = (await jobsOf(env, ref)).length;
      const refused = await env.step()(ref);
      expect(refused).toMatchObject({ action: 'waiting', reason: 'WriteRefused' });
      expect(refused.message).toContain('create Job');
      expect((await jobsOf(env, ref)).length).toBe(jobsBefore);
      expect((await readObject(env, ref)).metadata.annotations?.[ACCEPT_EMPTY_STATE_ANNOTATION]).toBe('true');
    } finally {
      await quota.lift();
    }
    const created = await stepUntil(env.step(), ref, 'created');
    expect(created.reason).toBe('InputsChanged');
    expect(
      (await readObject(env, ref)).metadata.annotations?.[ACCEPT_EMPTY_STATE_ANNOTATION],
    ).toBeUndefined();
  });

  it('deleting, it does not destroy from nothing (which would succeed, drop the finalizer and leave the infrastructure running): StateMissing until the annotation lets it go, without a Job', async () => {
    const ref = await appliedMachine('m-lost-deleting');
    const stateSecret = 'tfstate-default-m-m-lost-deleting';
    await env.core.deleteNamespacedSecret({ namespace: env.namespace, name: stateSecret });
    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES[ref.kind],
      namespace: ref.namespace,
      name: ref.name,
    });
    const jobsBefore = (await jobsOf(env, ref)).length;
    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'waiting', reason: 'StateMissing' });
    expect(outcome.message).toContain('without a destroy');
    expect((await jobsOf(env, ref)).length).toBe(jobsBefore);
    expect((await readObject(env, ref)).metadata.finalizers).toContain(
      'infrastructure.cluster.x-k8s.io/captf',
    );

    // A person who has removed the infrastructure by hand (or accepts leaving it) lets the object go: a
    // destroy from an empty state would destroy nothing, so no Job runs (none could in a namespace being
    // deleted), and the Event says what stays.
    await mergePatch(ref, { metadata: { annotations: { [ACCEPT_EMPTY_STATE_ANNOTATION]: 'true' } } });
    const finalized = await stepUntil(env.step(), ref, 'finalized');
    expect(finalized.reason).toBe('DeletingWithoutState');
    await expect(readObject(env, ref)).rejects.toThrow();
    const destroys = await env.batch.listNamespacedJob({
      namespace: env.namespace,
      labelSelector: 'captf.io/owner-name=m-lost-deleting,captf.io/op=destroy',
    });
    expect(destroys.items).toEqual([]);
    const skipped = (await eventsOf(env, ref)).filter((e) => e.reason === 'DestroySkipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.note).toContain(stateSecret);
    // No placeholder of the lost state came back to be left behind.
    await expect(
      env.core.readNamespacedSecret({ namespace: env.namespace, name: stateSecret }),
    ).rejects.toThrow();
  });

  it('a state Secret OpenTofu never wrote is lost state too; one it wrote applies without the annotation, with or without resources', async () => {
    const ref = await appliedMachine('m-empty');
    // What a restore without its Secrets leaves once the runner identity puts its placeholder back.
    const name = 'tfstate-default-m-m-empty';
    const placeholder = await env.core.readNamespacedSecret({ namespace: env.namespace, name });
    await env.core.replaceNamespacedSecret({
      namespace: env.namespace,
      name,
      body: { ...placeholder, data: {} },
    });
    await patchSpec(env, ref, { variables: { n: 2 } });
    expect((await env.step()(ref)).reason).toBe('StateMissing');

    // A module may manage no resource: a state OpenTofu wrote is never taken for a lost one.
    await writeState(env, 'm-m-empty', tfstate(false));
    const created = await stepUntil(env.step(), ref, 'created');
    expect(created.reason).toBe('InputsChanged');
  });
});

describe('a deleting object whose status records no apply', () => {
  it('destroys when its state Secret holds resources', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-status-lost');
    expect((await env.step()(ref)).reason).toBe('FinalizerAdded');
    // Its infrastructure exists (the state says so); its status, lost in a restore, says nothing ran.
    await writeState(env, 'm-m-status-lost', tfstate(true));
    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES[ref.kind],
      namespace: ref.namespace,
      name: ref.name,
    });
    const created = await stepUntil(env.step(), ref, 'created');
    expect(created.reason).toBe('Deleting');
    const [job] = await jobsOf(env, ref);
    expect(job?.metadata?.labels?.['captf.io/op']).toBe('destroy');
  });

  it('drops the finalizer when there is no state', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-never');
    expect((await env.step()(ref)).reason).toBe('FinalizerAdded');
    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES[ref.kind],
      namespace: ref.namespace,
      name: ref.name,
    });
    expect((await env.step()(ref)).reason).toBe('DeletingWithoutState');
  });
});
