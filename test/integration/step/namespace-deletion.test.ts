import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { LABELS } from '../../../src/core/job-labels.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { heldPodOf } from '../../../src/core/pod-release.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import { ACCEPT_EMPTY_STATE_ANNOTATION } from '../../../src/core/state-evidence.ts';
import {
  createStepEnv,
  eventually,
  finishJob,
  jobsOf,
  readObject,
  result,
  type StepEnv,
  startedObject,
  stepUntil,
} from './harness.ts';

// A namespace deleted with provisioned objects in it, on the real API server and its namespace controller:
// the API server creates nothing in a namespace being deleted (its NamespaceLifecycle admission), so no
// destroy Job can run there, and the namespace controller deletes the state Secrets with everything else.
// Nothing may be destroyed from nothing unasked, nothing may retry for ever at a minute's pace, every object
// says why it waits and what lets it go, and once a person has let them go the namespace finishes.

/**
 * How long each stage of the namespace controller's work may take: it waits for the pods to go before the
 * rest (ordered namespace deletion) and requeues with its own backoff, slower on a loaded machine.
 */
const DELETION_WAIT_MS = 120_000;

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('nsdelete');
});

afterAll(async () => {
  await env?.close();
});

async function mergePatch(ref: ObjectRef, body: Record<string, unknown>): Promise<void> {
  const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
  await env.custom.patchNamespacedCustomObject(
    { ...CUSTOM_RESOURCES[ref.kind], namespace: ref.namespace, name: ref.name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** A machine applied once; returns its ref. */
async function appliedMachine(name: string, spec: Record<string, unknown> = {}): Promise<ObjectRef> {
  const { ref, job } = await startedObject(env, 'TerraformMachine', name, { variables: { n: 1 }, ...spec });
  await finishJob(env, job, {
    exitCode: 0,
    result: result('apply', 'succeeded', { outputs: { providerID: `demo://${name}` } }),
  });
  await stepUntil(env.step(), ref, 'bookkept');
  return ref;
}

/**
 * What the relay does with a pod's deletion event: the step of its owner, told the pod is held by our result
 * finalizer, releases it when nothing will read it again.
 */
async function releaseHeldPods(): Promise<void> {
  const pods = await env.core.listNamespacedPod({ namespace: env.namespace });
  for (const pod of pods.items) {
    const held = heldPodOf(pod.metadata);
    const owner = pod.metadata?.labels?.[LABELS.ownerName];
    if (held !== undefined && owner !== undefined)
      await env.step()(
        { kind: 'TerraformMachine', namespace: env.namespace, name: owner },
        { heldPod: held },
      );
  }
}

async function secretGone(name: string): Promise<boolean> {
  return env.core.readNamespacedSecret({ namespace: env.namespace, name }).then(
    () => false,
    () => true,
  );
}

describe('a namespace deleted with provisioned objects in it', () => {
  it(
    'waits NamespaceTerminating or StateMissing, destroys nothing unasked, and finishes once a person lets the objects go',
    async () => {
      const own = await appliedMachine('m-default');
      // A backend the user names keeps its state out of the namespace: only the destroy can act on it.
      const named = await appliedMachine('m-s3', { backend: { type: 's3' } });
      const stateSecret = 'tfstate-default-m-m-default';
      expect(await secretGone(stateSecret)).toBe(false);

      await env.core.deleteNamespace({ name: env.namespace });
      // The namespace controller deletes the pods first (Kubernetes' ordered namespace deletion) and the rest
      // once they are gone: the relay's pod events release the pods of bookkept Jobs from our finalizer, then
      // our objects are held by theirs and the state Secret (owned by nobody, with no finalizer) goes.
      await eventually(
        () => env.core.listNamespacedPod({ namespace: env.namespace }),
        (pods) => pods.items.every((pod) => pod.metadata?.deletionTimestamp !== undefined),
        DELETION_WAIT_MS,
        'the pods deleting',
      );
      await releaseHeldPods();
      for (const ref of [own, named])
        await eventually(
          () => readObject(env, ref),
          (object) => object.metadata.deletionTimestamp !== undefined,
          DELETION_WAIT_MS,
          `${ref.name} deleting`,
        );
      await eventually(
        () => secretGone(stateSecret),
        (gone) => gone,
        DELETION_WAIT_MS,
        'the state Secret gone',
      );

      // The destroy of the named backend's object is refused as every create there: recorded once, looked at
      // again only at the safety interval, saying what lets it go.
      const refused = await env.step()(named);
      expect(refused).toMatchObject({
        action: 'waiting',
        reason: 'NamespaceTerminating',
        requeueAfterSeconds: 600,
      });
      expect(refused.message).toContain('being terminated');
      expect(refused.message).toContain(FINALIZER);
      const waiting = await readObject(env, named);
      const status = waiting.status as {
        waitReason?: string;
        conditions?: { type: string; reason: string }[];
      };
      expect(status.waitReason).toBe('NamespaceTerminating');
      expect(status.conditions?.find((c) => c.type === 'WriteRefused')?.reason).toBe('NamespaceTerminating');
      const destroys = async (ref: ObjectRef) =>
        (await jobsOf(env, ref)).filter((j) => j.metadata?.labels?.['captf.io/op'] === 'destroy');
      expect(await destroys(named)).toEqual([]);
      // Found again: the same answer, nothing written.
      expect((await env.step()(named)).reason).toBe('NamespaceTerminating');
      expect((await readObject(env, named)).metadata.resourceVersion).toBe(waiting.metadata.resourceVersion);

      // The default backend's object lost its state with the namespace: it never destroys from nothing unasked.
      const lost = await env.step()(own);
      expect(lost).toMatchObject({ action: 'waiting', reason: 'StateMissing' });
      expect(lost.message).toContain(ACCEPT_EMPTY_STATE_ANNOTATION);
      expect(await destroys(own)).toEqual([]);

      // A person lets them go: the annotation for the lost state (no Job: none could be created here), the
      // finalizer removed by hand for the other.
      await mergePatch(own, { metadata: { annotations: { [ACCEPT_EMPTY_STATE_ANNOTATION]: 'true' } } });
      expect(await stepUntil(env.step(), own, 'finalized')).toMatchObject({ reason: 'DeletingWithoutState' });
      await mergePatch(named, { metadata: { finalizers: null } });
      expect((await env.step()(named)).reason).toBe('ObjectGone');

      await eventually(
        () =>
          env.core.readNamespace({ name: env.namespace }).then(
            (ns) => ns.metadata?.finalizers ?? ns.spec?.finalizers ?? ['?'],
            () => 'gone' as const,
          ),
        (state) => state === 'gone',
        DELETION_WAIT_MS,
        `namespace ${env.namespace} gone`,
      );
    },
    6 * DELETION_WAIT_MS,
  );
});
