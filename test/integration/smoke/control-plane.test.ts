import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Job,
  type V1Pod,
  VersionApi,
} from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_NODE_LABEL } from '../../../src/local/real-node/kubelet.ts';
import { testStack } from '../../env/index.ts';
import { PARKED_NODE } from '../../env/parked-node.ts';

// Smoke tests of the foundation: the real local control plane and Redis behave like the real thing.

const namespace = `smoke-${randomBytes(3).toString('hex')}`;
let core: CoreV1Api;
let batch: BatchV1Api;

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(200);
    value = await read();
  }
  return value;
}

function job(name: string): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, labels: { 'captf.io/managed': 'true' } },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'source', image: 'example.invalid/module:1', command: ['/bin/true'] }],
        },
      },
    },
  };
}

function statusCode(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

beforeAll(async () => {
  const config = new KubeConfig();
  config.loadFromFile(testStack().kubeconfigPath);
  core = config.makeApiClient(CoreV1Api);
  batch = config.makeApiClient(BatchV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
});

afterAll(async () => {
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe('local control plane', () => {
  it('serves the pinned Kubernetes version and registers no node of its own', async () => {
    const config = new KubeConfig();
    config.loadFromFile(testStack().kubeconfigPath);
    const version = await config.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe(`v${testStack().versions.kubernetes}`);
    // The stack is shared: other files register local nodes (LOCAL_NODE_LABEL) and the parked Node
    // (test/env/parked-node.ts); any other node would be the control plane's own.
    const nodes = await core.listNode();
    const own = nodes.items.filter(
      (node) => node.metadata?.name !== PARKED_NODE && node.metadata?.labels?.[LOCAL_NODE_LABEL] !== 'true',
    );
    expect(own.map((node) => node.metadata?.name)).toEqual([]);
  });

  it('publishes kube-root-ca.crt into a new namespace, so pods with service-account tokens can start', async () => {
    const configMap = await eventually(
      () => core.readNamespacedConfigMap({ namespace, name: 'kube-root-ca.crt' }).catch(() => undefined),
      (value) => value !== undefined,
    );
    expect(configMap?.data?.['ca.crt']).toContain('BEGIN CERTIFICATE');
  });

  it('runs the real Job controller: a Job gets a Pod, and the scheduler reports it unschedulable (no node)', async () => {
    await batch.createNamespacedJob({ namespace, body: job('smoke-unschedulable') });
    const pods = await eventually(
      () => core.listNamespacedPod({ namespace, labelSelector: 'job-name=smoke-unschedulable' }),
      (list) => list.items.length > 0 && scheduledCondition(list.items[0])?.reason === 'Unschedulable',
    );
    expect(pods.items).toHaveLength(1);
    const condition = scheduledCondition(pods.items[0]);
    expect(condition?.status).toBe('False');
    expect(condition?.reason).toBe('Unschedulable');
  });

  it('answers AlreadyExists (409) to a second create of the same Job name', async () => {
    await batch.createNamespacedJob({ namespace, body: job('smoke-twice') });
    const second = await batch
      .createNamespacedJob({ namespace, body: job('smoke-twice') })
      .catch((error: unknown) => error);
    expect(statusCode(second)).toBe(409);
    expect(JSON.parse(String((second as ApiException<string>).body)).reason).toBe('AlreadyExists');
  });

  it('answers Conflict (409) to an update with a stale resourceVersion', async () => {
    const created = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'smoke-rv' }, data: { step: '1' } },
    });
    const fresh = await core.replaceNamespacedConfigMap({
      name: 'smoke-rv',
      namespace,
      body: { ...created, data: { step: '2' } },
    });
    expect(fresh.metadata?.resourceVersion).not.toBe(created.metadata?.resourceVersion);
    const stale = await core
      .replaceNamespacedConfigMap({ name: 'smoke-rv', namespace, body: { ...created, data: { step: '3' } } })
      .catch((error: unknown) => error);
    expect(statusCode(stale)).toBe(409);
    expect(JSON.parse(String((stale as ApiException<string>).body)).reason).toBe('Conflict');
  });

  it('deletes the pods of a Job deleted with Background propagation (garbage collector runs)', async () => {
    await batch.createNamespacedJob({ namespace, body: job('smoke-gc') });
    await eventually(
      () => core.listNamespacedPod({ namespace, labelSelector: 'job-name=smoke-gc' }),
      (list) => list.items.length === 1,
    );
    await batch.deleteNamespacedJob({ name: 'smoke-gc', namespace, propagationPolicy: 'Background' });
    const pods = await eventually(
      () => core.listNamespacedPod({ namespace, labelSelector: 'job-name=smoke-gc' }),
      (list) => list.items.every((pod) => pod.metadata?.deletionTimestamp !== undefined),
    );
    expect(pods.items.every((pod) => pod.metadata?.deletionTimestamp !== undefined)).toBe(true);
  });
});

describe('local redis-server', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(testStack().redisUrl, { enableOfflineQueue: true, maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    await redis?.quit();
  });

  it('SET NX PX: the first caller takes the key, the second does not, and the key expires', async () => {
    const key = `smoke:${randomBytes(4).toString('hex')}`;
    expect(await redis.set(key, 'a', 'PX', 300, 'NX')).toBe('OK');
    expect(await redis.set(key, 'b', 'PX', 300, 'NX')).toBeNull();
    expect(await redis.get(key)).toBe('a');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    await sleep(400);
    expect(await redis.get(key)).toBeNull();
    expect(await redis.set(key, 'b', 'PX', 300, 'NX')).toBe('OK');
  });

  it('runs with maxmemory-policy noeviction and no persistence', async () => {
    expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    expect(await redis.config('GET', 'save')).toEqual(['save', '']);
  });
});

function scheduledCondition(pod: V1Pod | undefined) {
  return pod?.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
}
