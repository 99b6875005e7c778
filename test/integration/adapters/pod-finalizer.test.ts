import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter, type KubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { KubeError } from '../../../src/adapters/kube/errors.ts';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { testStack } from '../../env/index.ts';

// `removePodFinalizer` against the real kube-apiserver: it removes our finalizer and only ours, a pod
// already gone or already released is success, and every call is one counted `patch pods` request.

const namespace = `pod-finalizer-${randomBytes(3).toString('hex')}`;
const OTHER = 'example.com/keep-me';
let adapter: KubeAdapter;
let core: CoreV1Api;

/** A pod that no node will ever run (its node selector matches nothing), held by two finalizers. */
function heldPod(name: string): V1Pod {
  return {
    metadata: { name, namespace, finalizers: [OTHER, POD_RESULT_FINALIZER] },
    spec: {
      nodeSelector: { 'captf.io/no-such-node': 'true' },
      containers: [{ name: 'source', image: 'registry.invalid/module:1' }],
    },
  };
}

async function readPod(name: string): Promise<V1Pod | undefined> {
  return core.readNamespacedPod({ namespace, name }).catch(() => undefined);
}

beforeAll(async () => {
  const config = new KubeConfig();
  config.loadFromFile(testStack().kubeconfigPath);
  core = config.makeApiClient(CoreV1Api);
  adapter = createKubeAdapter({
    source: { kind: 'loaded', config },
    clock: fixedClock(Date.UTC(2026, 10, 29, 12, 0, 0)),
    reporter: { controller: 'captf.io/controller', instance: 'pod-finalizer-test' },
  });
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // Pod admission needs the namespace's default ServiceAccount.
  for (let tries = 0; tries < 120; tries += 1) {
    const account = await core
      .readNamespacedServiceAccount({ namespace, name: 'default' })
      .catch(() => undefined);
    if (account) break;
    await sleep(250);
  }
});

afterAll(async () => {
  const pods = await core.listNamespacedPod({ namespace }).catch(() => ({ items: [] as V1Pod[] }));
  for (const pod of pods.items) {
    await core
      .patchNamespacedPod({
        namespace,
        name: pod.metadata?.name ?? '',
        body: [{ op: 'remove', path: '/metadata/finalizers' }],
      })
      .catch(() => undefined);
  }
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe('KubeWriter.removePodFinalizer', () => {
  it('removes only our finalizer from a deleted pod; the other still holds it', async () => {
    await core.createNamespacedPod({ namespace, body: heldPod('p-deleted') });
    await core.deleteNamespacedPod({ namespace, name: 'p-deleted' });
    const deleted = await readPod('p-deleted');
    expect(deleted?.metadata?.deletionTimestamp).toBeDefined();

    adapter.takeRequestCounts();
    expect(await adapter.writer.removePodFinalizer(namespace, 'p-deleted', POD_RESULT_FINALIZER)).toBe(
      'removed',
    );
    expect(adapter.takeRequestCounts()).toEqual({ total: 1, byRequest: { 'patch pods': 1 } });

    const after = await readPod('p-deleted');
    expect(after?.metadata?.finalizers).toEqual([OTHER]);
    // Already released: still success, and still nothing else touched.
    expect(await adapter.writer.removePodFinalizer(namespace, 'p-deleted', POD_RESULT_FINALIZER)).toBe(
      'removed',
    );
    expect((await readPod('p-deleted'))?.metadata?.finalizers).toEqual([OTHER]);
  });

  it('a pod held only by our finalizer disappears once it is released', async () => {
    await core.createNamespacedPod({
      namespace,
      body: {
        ...heldPod('p-ours'),
        metadata: { name: 'p-ours', namespace, finalizers: [POD_RESULT_FINALIZER] },
      },
    });
    await core.deleteNamespacedPod({ namespace, name: 'p-ours' });
    expect((await readPod('p-ours'))?.metadata?.deletionTimestamp).toBeDefined();
    expect(await adapter.writer.removePodFinalizer(namespace, 'p-ours', POD_RESULT_FINALIZER)).toBe(
      'removed',
    );
    expect(await readPod('p-ours')).toBeUndefined();
  });

  it('a pod that is gone is success (absent), counted like every request', async () => {
    adapter.takeRequestCounts();
    expect(await adapter.writer.removePodFinalizer(namespace, 'p-never', POD_RESULT_FINALIZER)).toBe(
      'absent',
    );
    expect(adapter.takeRequestCounts().byRequest).toEqual({ 'patch pods': 1 });
  });

  it('with a stale resourceVersion the removal is refused (Conflict) and the finalizer stays', async () => {
    const created = await core.createNamespacedPod({ namespace, body: heldPod('p-stale') });
    const staleVersion = created.metadata?.resourceVersion ?? '';
    await core.patchNamespacedPod({
      namespace,
      name: 'p-stale',
      body: [{ op: 'add', path: '/metadata/labels', value: { moved: 'yes' } }],
    });
    const error = await adapter.writer
      .removePodFinalizer(namespace, 'p-stale', POD_RESULT_FINALIZER, staleVersion)
      .then(
        () => undefined,
        (cause: unknown) => cause,
      );
    expect(error).toBeInstanceOf(KubeError);
    expect((error as KubeError).code).toBe('Conflict');
    expect((await readPod('p-stale'))?.metadata?.finalizers).toEqual([OTHER, POD_RESULT_FINALIZER]);

    const fresh = (await readPod('p-stale'))?.metadata?.resourceVersion;
    expect(await adapter.writer.removePodFinalizer(namespace, 'p-stale', POD_RESULT_FINALIZER, fresh)).toBe(
      'removed',
    );
    expect((await readPod('p-stale'))?.metadata?.finalizers).toEqual([OTHER]);
  });
});
