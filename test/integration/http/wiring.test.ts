import { randomBytes } from 'node:crypto';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeAppDeps } from '../../../functions/compose.ts';
import { systemClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter, type KubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { readConfig } from '../../../src/config.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import { buildApp } from '../../../src/http/app.ts';
import { createLogger } from '../../../src/http/logger.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
import { testStack } from '../../env/index.ts';

// The handlers wired to the real Redis and API server through functions/compose.ts: dedupe, owner
// resolution, the requeue schedule, the sweep, readiness and fleet metrics. The reconcile step itself is
// written elsewhere; here a recording step stands in for it, so what is checked is the wiring around it.

const namespace = `wiring-${randomBytes(3).toString('hex')}`;
const GROUP = 'infrastructure.cluster.x-k8s.io';
const TOKEN = randomBytes(24).toString('hex');
const auth = { authorization: `Bearer ${TOKEN}` };

let kc: KubeConfig;
let redis: RedisAdapter;
let kube: KubeAdapter;
const calls: ObjectRef[] = [];
let answer: (ref: ObjectRef) => Partial<StepOutcome> = () => ({});

const step: ReconcileStep = async (ref) => {
  calls.push(ref);
  return { ref, action: 'none', reason: 'UpToDate', requeueAfterSeconds: 600, ...answer(ref) };
};

function appWith(redisAdapter: RedisAdapter, overrides: Record<string, string> = {}): FastifyInstance {
  const read = readConfig({
    REDIS_URL: testStack().redisUrl,
    KUBECONFIG: testStack().kubeconfigPath,
    CAPTF_AUTH_TOKEN: TOKEN,
    CAPTF_RUNNER_IMAGE: 'captf-runner:test',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
  if (!read.ok) throw new Error(read.message);
  return buildApp(
    composeAppDeps({
      config: read.config,
      logger: createLogger('silent'),
      redis: redisAdapter,
      kube,
      step,
      clock: systemClock,
    }),
  );
}

function refEvent(apiVersion: string, kind: string, name: string) {
  return {
    headers: {
      ...auth,
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': randomBytes(8).toString('hex'),
      'ce-source': testStack().apiServerUrl,
      'ce-type': 'dev.knative.apiserver.ref.update',
    },
    payload: JSON.stringify({ apiVersion, kind, name, namespace }),
  };
}

beforeAll(async () => {
  const stack = testStack();
  kc = new KubeConfig();
  kc.loadFromFile(stack.kubeconfigPath);
  // The CRDs come from the global setup (test/env/crds.ts).
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  redis = createRedisAdapter({ url: stack.redisUrl, keyPrefix: `wiring-${randomBytes(3).toString('hex')}` });
  await redis.waitUntilReady(5000);
  kube = createKubeAdapter({
    source: { kind: 'file', path: stack.kubeconfigPath },
    clock: systemClock,
    reporter: { controller: 'captf.io/test', instance: 'wiring' },
  });
}, 120_000);

afterAll(async () => {
  await redis?.close();
});

describe('handlers wired to real Redis and the API server', () => {
  it('a resource-mode event replayed with the same uid@resourceVersion runs one step (Redis dedupe)', async () => {
    const app = appWith(redis);
    calls.length = 0;
    const event = {
      headers: { ...refEvent('', '', '').headers, 'ce-type': 'dev.knative.apiserver.resource.update' },
      payload: JSON.stringify({
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'TerraformCluster',
        metadata: { name: 'c1', namespace, uid: randomBytes(8).toString('hex'), resourceVersion: '100' },
      }),
    };
    const first = await app.inject({ method: 'POST', url: '/events', ...event });
    const second = await app.inject({ method: 'POST', url: '/events', ...event });
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect(second.json()).toEqual({ handled: false, reason: 'Duplicate' });
    expect(calls).toEqual([{ kind: 'TerraformCluster', namespace, name: 'c1' }]);
    await app.close();
  });

  it('reference-mode Job and Pod events map to the owner by live reads, which show nothing new; a Secret event steps nothing', async () => {
    const app = appWith(redis);
    const labels = {
      'captf.io/managed': 'true',
      'captf.io/owner-kind': 'TerraformMachine',
      'captf.io/owner-name': 'm1',
    };
    const job = await kc.makeApiClient(BatchV1Api).createNamespacedJob({
      namespace,
      body: {
        metadata: { name: 'captf-m-m1-apply-a1-abcdef', labels },
        spec: {
          suspend: true,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'example.invalid/x:1' }] },
          },
        },
      },
    });
    const ownerRef = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      name: job.metadata?.name ?? '',
      uid: job.metadata?.uid ?? '',
    };
    // A Job's pod carries our labels only through its Job: its owner reference leads there.
    await kc.makeApiClient(CoreV1Api).createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'captf-m-m1-apply-a1-abcdef-pod', ownerReferences: [ownerRef] },
        spec: { containers: [{ name: 'x', image: 'example.invalid/x:1' }] },
      },
    });
    calls.length = 0;
    // Both lead to their owner (one without would answer NotManaged or ObjectGone); read live, the Job is
    // running and the pod pending: nothing a step reads changed, so no step runs.
    for (const [apiVersion, kind, name, reason] of [
      ['batch/v1', 'Job', 'captf-m-m1-apply-a1-abcdef', 'JobRunning'],
      ['v1', 'Pod', 'captf-m-m1-apply-a1-abcdef-pod', 'PodUneventful'],
    ] as const) {
      const response = await app.inject({
        method: 'POST',
        url: '/events',
        ...refEvent(apiVersion, kind, name),
      });
      expect(response.statusCode, `${kind}: ${response.body}`).toBe(200);
      expect(response.json()).toEqual({ handled: false, reason });
    }
    const gone = await app.inject({
      method: 'POST',
      url: '/events',
      ...refEvent('v1', 'Pod', 'no-such-pod'),
    });
    expect(gone.json()).toEqual({ handled: false, reason: 'ObjectGone' });
    // A Secret event runs no step and reads nothing: it only wakes the objects waiting for that Secret
    // (none here).
    const secret = await app.inject({
      method: 'POST',
      url: '/events',
      ...refEvent('v1', 'Secret', 'captf-run-captf-m-m1-apply-a1-abcdef'),
    });
    expect(secret.json()).toEqual({ handled: true, woken: [] });
    expect(calls).toEqual([]);
    await app.close();
  });

  it('a requeue due now is claimed by /tick and its step runs; the next requeue lands in Redis', async () => {
    const app = appWith(redis, { CAPTF_SYNC_PERIOD_SECONDS: '3600' });
    answer = (ref) =>
      ref.name === 'soon' ? { action: 'watching', reason: 'JobActive', requeueAfterSeconds: 0 } : {};
    await app.inject({
      method: 'POST',
      url: `/reconcile/TerraformCluster/${namespace}/soon`,
      headers: auth,
    });
    calls.length = 0;
    answer = () => ({ action: 'waiting', reason: 'WaitingForJobSlot', requeueAfterSeconds: 15 });
    const tick = await app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(tick.statusCode).toBe(200);
    expect(calls).toContainEqual({ kind: 'TerraformCluster', namespace, name: 'soon' });
    const at = await redis.schedule.scheduledAt(`TerraformCluster/${namespace}/soon`);
    expect(at.kind).toBe('scheduled');
    if (at.kind === 'scheduled') expect(at.dueMs - Date.now()).toBeGreaterThan(10_000);
    answer = () => ({});
    await app.close();
  });

  it("Cluster API's objects reach ours: a Machine and a MachinePool their infrastructure reference, a paused Cluster the members it outdated", async () => {
    const app = appWith(redis);
    const objects = kc.makeApiClient(CustomObjectsApi);
    const capi = (plural: string, body: Record<string, unknown>) =>
      objects.createNamespacedCustomObject({
        group: 'cluster.x-k8s.io',
        version: 'v1beta2',
        namespace,
        plural,
        body: { apiVersion: 'cluster.x-k8s.io/v1beta2', ...body },
      });
    // Paused from the start, so Cluster API's own manager (running for the test run) leaves them be.
    await capi('clusters', {
      kind: 'Cluster',
      metadata: { name: 'w-c' },
      spec: { paused: true, infrastructureRef: { apiGroup: GROUP, kind: 'TerraformCluster', name: 'w-c' } },
    });
    const machineSpec = (infrastructureRef: Record<string, string>) => ({
      clusterName: 'w-c',
      bootstrap: { dataSecretName: 'w-bootstrap' },
      infrastructureRef,
    });
    await capi('machines', {
      kind: 'Machine',
      metadata: { name: 'w-m' },
      spec: machineSpec({ apiGroup: GROUP, kind: 'TerraformMachine', name: 'm-capi' }),
    });
    await capi('machinepools', {
      kind: 'MachinePool',
      metadata: { name: 'w-mp' },
      spec: {
        clusterName: 'w-c',
        template: { spec: machineSpec({ apiGroup: GROUP, kind: 'TerraformMachinePool', name: 'mp-capi' }) },
      },
    });
    // Two members of the Cluster: one whose status shows no pause, one that already shows it.
    for (const [name, status] of [
      ['member-a', 'False'],
      ['member-b', 'True'],
    ] as const) {
      await objects.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1alpha1',
        namespace,
        plural: 'terraformmachines',
        body: {
          apiVersion: `${GROUP}/v1alpha1`,
          kind: 'TerraformMachine',
          metadata: { name, labels: { 'cluster.x-k8s.io/cluster-name': 'w-c' } },
          spec: { source: { image: 'm:1' } },
        },
      });
      await objects.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: 'v1alpha1',
          namespace,
          plural: 'terraformmachines',
          name,
          body: {
            status: {
              conditions: [
                {
                  type: 'Paused',
                  status,
                  reason: status === 'True' ? 'Paused' : 'NotPaused',
                  message: 'm',
                  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
                },
              ],
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    calls.length = 0;
    for (const [kind, name] of [
      ['Machine', 'w-m'],
      ['MachinePool', 'w-mp'],
    ] as const) {
      const response = await app.inject({
        method: 'POST',
        url: '/events',
        ...refEvent('cluster.x-k8s.io/v1beta2', kind, name),
      });
      expect(response.statusCode, `${kind}: ${response.body}`).toBe(200);
    }
    expect(calls).toEqual([
      { kind: 'TerraformMachine', namespace, name: 'm-capi' },
      { kind: 'TerraformMachinePool', namespace, name: 'mp-capi' },
    ]);

    calls.length = 0;
    const cluster = await app.inject({
      method: 'POST',
      url: '/events',
      ...refEvent('cluster.x-k8s.io/v1beta2', 'Cluster', 'w-c'),
    });
    expect(cluster.statusCode, cluster.body).toBe(200);
    const memberA = { kind: 'TerraformMachine', namespace, name: 'member-a' };
    expect(cluster.json()).toEqual({ handled: true, woken: [memberA] });
    expect(calls).toEqual([]);
    const at = await redis.schedule.scheduledAt(`TerraformMachine/${namespace}/member-a`);
    expect(at.kind).toBe('scheduled');
    if (at.kind === 'scheduled') expect(at.dueMs - Date.now()).toBeLessThan(1000);
    await app.close();
  });

  it('the sweep gives every object a requeue and deletes nothing: a bookkept Job is none of its business', async () => {
    const fresh = createRedisAdapter({
      url: testStack().redisUrl,
      keyPrefix: `sweep-${randomBytes(3).toString('hex')}`,
    });
    await fresh.waitUntilReady(5000);
    const app = appWith(fresh);
    const objects = kc.makeApiClient(CustomObjectsApi);
    await objects.createNamespacedCustomObject({
      group: GROUP,
      version: 'v1alpha1',
      namespace,
      plural: 'terraformclusters',
      body: {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'TerraformCluster',
        metadata: { name: 'swept', namespace },
        spec: { source: { image: 'm:1' } },
      },
    });
    const core = kc.makeApiClient(CoreV1Api);
    // Bookkeeping deletes a Job's per-run Secret before it marks the Job bookkept (src/step/perform.ts), so the
    // sweep never looks for one: a DELETE per retained Job every period is what it cost when it did.
    await kc.makeApiClient(BatchV1Api).createNamespacedJob({
      namespace,
      body: {
        metadata: {
          name: 'left-job',
          labels: { 'captf.io/managed': 'true' },
          annotations: { 'captf.io/bookkept': 'true' },
        },
        spec: {
          suspend: true,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'example.invalid/x:1' }] },
          },
        },
      },
    });
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'captf-run-left-job' } } });
    const tick = await app.inject({ method: 'POST', url: '/tick', headers: auth });
    // Other files' objects share the stack: their bookkeeping may be this sweep's too, so only its state counts.
    expect(tick.json().sweep).toMatchObject({ state: 'ran' });
    expect((await fresh.schedule.scheduledAt(`TerraformCluster/${namespace}/swept`)).kind).toBe('scheduled');
    expect((await core.readNamespacedSecret({ namespace, name: 'captf-run-left-job' })).metadata?.name).toBe(
      'captf-run-left-job',
    );
    const again = await app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(again.json().sweep).toEqual({ state: 'skipped', reason: 'NotDueOrHeldElsewhere' });
    await app.close();
    await fresh.close();
  });

  it('/metrics shows fleet figures written by any instance', async () => {
    // Every scrape reads the store here; the snapshot kept between scrapes (60 s by default) is
    // test/unit/metrics/fleet-snapshot.test.ts's.
    const app = appWith(redis, { CAPTF_METRICS_FLEET_MAX_AGE_SECONDS: '0' });
    const { createRedisFleetStore } = await import('../../../src/metrics/redis-fleet-store.ts');
    const store = createRedisFleetStore(redis.client, 'captf');
    const jobName = `metrics-${randomBytes(3).toString('hex')}`;
    await store.jobStarted({ namespace, name: jobName });
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const active = Number(/^captf_jobs_active (\d+)$/m.exec(text)?.[1]);
    expect(active).toBeGreaterThanOrEqual(1);
    await store.jobFinished({
      namespace,
      name: jobName,
      kind: 'TerraformCluster',
      op: 'apply',
      result: 'failed',
    });
    await store.jobFinished({
      namespace,
      name: jobName,
      kind: 'TerraformCluster',
      op: 'apply',
      result: 'failed',
    });
    const after = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(after).toMatch(/captf_jobs_total\{kind="TerraformCluster",op="apply",result="failed"\} [1-9]/);
    // This instance's own API requests, counted on the wire by the adapter (the fleet bench reads them).
    const gets = (body: string) =>
      Number(/^captf_kube_requests_total\{verb="get",resource="jobs"\} (\d+)$/m.exec(body)?.[1] ?? 0);
    const before = gets(after);
    await kube.reader.getJob(namespace, 'not-there');
    expect(gets((await app.inject({ method: 'GET', url: '/metrics' })).body)).toBe(before + 1);
    await app.close();
  });

  it('with Redis unreachable: events answer 503 with Retry-After (never 500) and /readyz is 503', async () => {
    const dead = createRedisAdapter({ url: 'redis://127.0.0.1:1', keyPrefix: 'dead' });
    const app = appWith(dead, { REDIS_URL: 'redis://127.0.0.1:1' });
    const event = {
      headers: { ...refEvent('', '', '').headers, 'ce-type': 'dev.knative.apiserver.resource.add' },
      payload: JSON.stringify({
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'TerraformCluster',
        metadata: { name: 'c9', namespace, uid: 'u9', resourceVersion: '9' },
      }),
    };
    const response = await app.inject({ method: 'POST', url: '/events', ...event });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
    const tick = await app.inject({ method: 'POST', url: '/tick', headers: auth });
    expect(tick.statusCode).toBe(503);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks.apiServer).toEqual({ ok: true });
    await app.close();
    await dead.close();
  });
});
