import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestCounts } from '../../../src/adapters/kube/request-count.ts';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { createRedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import type { StoredFact } from '../../../src/adapters/redis/cluster-facts.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import { type EventApp, eventApp } from '../http/event-app.ts';
import {
  createObject,
  createStepEnv,
  finishJob,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// The cluster facts cache (issue 22, DESIGN.md section 5 step 2; src/step/cluster-facts.ts) on the real API
// server and Redis: a member's wait found again costs its own object only, an event of its cluster updates
// the facts before it wakes anyone, an older event never overwrites newer facts, a member without an entry
// (expired, dropped, Redis down) reads live, and a start is always planned from a live read. Requests are
// counted on the wire (as test/integration/step/request-counts.test.ts does), with unshadowed steps: the
// dry run that shadows a step would be counted too.

const CAPI = { group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'clusters' };
const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io';
const label = (cluster: string) => ({ 'cluster.x-k8s.io/cluster-name': cluster });

let env: StepEnv;
let events: EventApp;

beforeAll(async () => {
  env = await createStepEnv('facts');
  events = await eventApp(env);
});

afterAll(async () => {
  await events?.close();
  await env?.close();
});

async function counted(ref: ObjectRef): Promise<{ outcome: StepOutcome; counts: RequestCounts }> {
  env.kube.takeRequestCounts();
  const outcome = await env.step({ shadow: false })(ref);
  return { outcome, counts: env.kube.takeRequestCounts() };
}

/** Runs one step through the handlers (settled: waits register, wakes go out), as `/reconcile` does. */
async function settled(ref: ObjectRef): Promise<StepOutcome> {
  const response = await events.app.inject({
    method: 'POST',
    url: `/reconcile/${ref.kind}/${ref.namespace}/${ref.name}`,
  });
  return (response.json() as { outcome: StepOutcome }).outcome;
}

/** The cache entry of `cluster`, both parts, as stored. */
async function cached(cluster: string): Promise<{ owning?: StoredFact; capi?: StoredFact }> {
  const read = await env.redis.clusterFacts.get(env.namespace, cluster);
  if (read.kind !== 'found') throw new Error('read the cluster facts: Redis did not answer');
  return read.facts;
}

/** The Cluster API Cluster `name` (over the TerraformCluster of that name), as the API server has it. */
async function capiCluster(
  name: string,
): Promise<Record<string, unknown> & { metadata: { resourceVersion: string } }> {
  return (await env.custom.getNamespacedCustomObject({ ...CAPI, namespace: env.namespace, name })) as never;
}

describe('the cluster facts cache', () => {
  it('(1, 4) a wait found again costs only its own object; without the entry (expired, Redis down) the cluster is read live and the entry filled again', async () => {
    await createObject(env, 'TerraformCluster', 'fc-wait', {}, { labels: label('fc-wait') });
    const ref = await createObject(env, 'TerraformMachine', 'fc-wait-m', {}, { labels: label('fc-wait') });
    await stepUntil(env.step(), ref, 'waiting');
    // The first wait read its cluster live (nothing cached yet) and left what it read: the TerraformCluster
    // (not ready) and no Cluster API Cluster of that name.
    const entry = await cached('fc-wait');
    expect(entry.owning?.payload).toContain('"ready":false');
    expect(entry.capi).toEqual({ uid: undefined, resourceVersion: '0', payload: 'absent' });

    const again = await counted(ref);
    expect(again.outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForDependencies' });
    // Before the cache: get terraformmachines, list terraformclusters, get clusters (3).
    expect(again.counts).toEqual({ total: 1, byRequest: { 'get terraformmachines': 1 } });

    // Expired (the TTL is the wait's 600 s safety requeue; dropped here): read live, and cached again.
    await env.redis.client.del(
      env.redis.keys.clusterFacts(env.namespace, 'fc-wait', 'owning'),
      env.redis.keys.clusterFacts(env.namespace, 'fc-wait', 'capi'),
    );
    const expired = await counted(ref);
    expect(expired.outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForDependencies' });
    expect(expired.counts.byRequest).toEqual({
      'get terraformmachines': 1,
      'list terraformclusters': 1,
      'get clusters': 1,
    });
    expect(await cached('fc-wait')).toEqual(entry);

    // Redis unreachable for the cache: the same step, live, never failed by the cache.
    const down = createRedisAdapter({ url: 'redis://127.0.0.1:1', keyPrefix: env.keyPrefix });
    try {
      env.kube.takeRequestCounts();
      const outcome = await env.step({
        shadow: false,
        redis: { ...env.redis, clusterFacts: down.clusterFacts },
      })(ref);
      expect(outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForDependencies' });
      expect(env.kube.takeRequestCounts().byRequest).toEqual({
        'get terraformmachines': 1,
        'list terraformclusters': 1,
        'get clusters': 1,
      });
    } finally {
      await down.close();
    }
  });

  it('(2) a TerraformCluster made ready by its own controller: its event updates the facts; the member plans its start from them and starts from a live read', async () => {
    const cluster = await createObject(
      env,
      'TerraformCluster',
      'fc-event',
      {},
      { labels: label('fc-event'), annotations: { 'cluster.x-k8s.io/managed-by': 'someone' } },
    );
    const member = await createObject(
      env,
      'TerraformMachine',
      'fc-event-m',
      {},
      { labels: label('fc-event') },
    );
    expect(await stepUntil(env.step(), member, 'waiting')).toMatchObject({
      reason: 'WaitingForDependencies',
    });

    await env.custom.patchNamespacedCustomObjectStatus(
      {
        ...CUSTOM_RESOURCES.TerraformCluster,
        namespace: env.namespace,
        name: 'fc-event',
        body: { status: { ready: true } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // No event yet: the wait stands on the cached facts (what the event, or the entry's expiry, puts right).
    const unseen = await counted(member);
    expect(unseen.outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForDependencies' });
    expect(unseen.counts).toEqual({ total: 1, byRequest: { 'get terraformmachines': 1 } });

    const copy = await events.copyOf(cluster);
    const delivered = await events.deliver('resource', 'update', copy);
    expect(delivered.status).toBe(200);
    expect((await cached('fc-event')).owning).toMatchObject({
      resourceVersion: copy.metadata?.resourceVersion,
      payload: expect.stringContaining('"ready":true'),
    });

    // The cached facts allow the start; the start itself is planned again from the cluster read live, and
    // only the cluster: the object is read once (src/step/read-memo.ts).
    const start = await counted(member);
    expect(start.outcome.action).toBe('created');
    expect(start.counts.byRequest).toMatchObject({
      'get terraformmachines': 1,
      'list terraformclusters': 1,
      'get clusters': 1,
    });
  });

  it('(2) a TerraformCluster that becomes ready: its step outdates the cached view before it wakes its members, the woken member starts from a live read, and the event of its write fills the view', async () => {
    const cluster = await startedObject(
      env,
      'TerraformCluster',
      'fc-ready',
      {},
      { labels: label('fc-ready') },
    );
    const member = await createObject(
      env,
      'TerraformMachine',
      'fc-ready-m',
      {},
      { labels: label('fc-ready') },
    );
    await stepUntil(env.step(), member, 'none');
    // Settled: the wait registers under its TerraformCluster.
    expect(await settled(member)).toMatchObject({ action: 'waiting', reason: 'WaitingForDependencies' });
    const before = await cached('fc-ready');
    expect(before.owning?.payload).toContain('"ready":false');

    await finishJob(env, cluster.job, { exitCode: 0, result: result('apply', 'succeeded') });
    expect(await settled(cluster.ref)).toMatchObject({ action: 'bookkept' });
    const ready = await readObject(env, cluster.ref);
    expect(ready.status).toMatchObject({ ready: true });
    // Only the version is known (its own write), so no member plans from the older view.
    expect((await cached('fc-ready')).owning).toEqual({
      uid: ready.metadata.uid,
      resourceVersion: ready.metadata.resourceVersion,
      payload: '',
    });
    // Woken: its requeue is due now (it was 600 s away).
    const due = await env.redis.schedule.scheduledAt(`TerraformMachine/${env.namespace}/fc-ready-m`);
    expect(due.kind === 'scheduled' && due.dueMs).toBeLessThanOrEqual(Date.now() + 1000);

    const start = await counted(member);
    expect(start.outcome.action).toBe('created');
    // The TerraformCluster read live (the view was outdated); the Cluster API Cluster's absence came from
    // the cache, so the start was planned again with it read live; what this step read live already (the
    // object, the TerraformCluster) is not read again (src/step/read-memo.ts).
    expect(start.counts.byRequest).toMatchObject({
      'get terraformmachines': 1,
      'list terraformclusters': 1,
      'get clusters': 1,
    });

    // The event of the TerraformCluster's own write (a duplicate for its step) fills the view.
    const echo = await events.deliver('resource', 'update', await events.copyOf(cluster.ref));
    expect(echo.body).toMatchObject({ handled: false, reason: 'Duplicate' });
    const filled = (await cached('fc-ready')).owning;
    expect(filled?.resourceVersion).toBe(ready.metadata.resourceVersion);
    expect(filled?.payload).toContain('"ready":true');
  });

  it('(2, 3) a Cluster unpaused: its event updates the facts before it wakes the member, which leaves Paused from the cache; an older event keeps the newer facts', async () => {
    await createObject(
      env,
      'TerraformCluster',
      'fc-pause',
      {},
      { annotations: { 'cluster.x-k8s.io/managed-by': 'someone' } },
    );
    await env.custom.createNamespacedCustomObject({
      ...CAPI,
      namespace: env.namespace,
      body: {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Cluster',
        metadata: { name: 'fc-pause' },
        spec: {
          paused: true,
          infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformCluster', name: 'fc-pause' },
        },
      },
    });
    const member = await createObject(
      env,
      'TerraformMachine',
      'fc-pause-m',
      {},
      { labels: label('fc-pause') },
    );
    await stepUntil(env.step(), member, 'none');
    expect(await settled(member)).toMatchObject({ action: 'waiting', reason: 'Paused' });
    const pausedCopy = await capiCluster('fc-pause');
    expect((await cached('fc-pause')).capi?.payload).toContain('"paused":true');

    const again = await counted(member);
    expect(again.outcome).toMatchObject({ action: 'waiting', reason: 'Paused' });
    expect(again.counts).toEqual({ total: 1, byRequest: { 'get terraformmachines': 1 } });

    await env.custom.patchNamespacedCustomObject(
      { ...CAPI, namespace: env.namespace, name: 'fc-pause', body: { spec: { paused: false } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const unpausedCopy = await capiCluster('fc-pause');
    // Sent again on 429 or 503, as the sources do (a fresh API server may still initialise a CRD's storage).
    let unpause = await events.deliver('resource', 'update', unpausedCopy);
    for (let tries = 0; tries < 20 && (unpause.status === 429 || unpause.status === 503); tries += 1) {
      await sleep(500);
      unpause = await events.deliver('resource', 'update', unpausedCopy);
    }
    expect(unpause.body).toMatchObject({ handled: true, woken: [member] });
    expect((await cached('fc-pause')).capi).toMatchObject({
      resourceVersion: unpausedCopy.metadata.resourceVersion,
      payload: expect.stringContaining('"paused":false'),
    });

    // The older copy, late: the newer facts stay.
    const late = await events.deliver('resource', 'update', pausedCopy);
    expect(late.body).toMatchObject({ handled: false, reason: 'Stale' });
    expect((await cached('fc-pause')).capi?.resourceVersion).toBe(unpausedCopy.metadata.resourceVersion);

    // The woken member leaves Paused from the cached facts (a wait: no cluster read), and waits for the
    // Machine Cluster API has not made for it yet.
    const woken = await counted(member);
    expect(woken.outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForOwner' });
    expect(woken.counts.byRequest['get clusters'] ?? 0).toBe(0);
    expect(woken.counts.byRequest['list terraformclusters'] ?? 0).toBe(0);
    expect((await statusOf(env, member)).conditions?.find((c) => c.type === 'Paused')?.status).toBe('False');

    // Its deletion drops the entry: the next member step reads live.
    await env.custom.deleteNamespacedCustomObject({ ...CAPI, namespace: env.namespace, name: 'fc-pause' });
    await events.deliver('resource', 'delete', unpausedCopy);
    expect((await cached('fc-pause')).capi).toBeUndefined();
  });
});
