import { describe, expect, it } from 'vitest';
import { OBJECT_KINDS, type ObjectRef } from '../../../src/core/object-ref.ts';
import { API_SERVER_EVENT_TYPES } from '../../../src/schemas/cloudevents.ts';
import { auth, binaryHeaders, structuredBody, T0, testApp } from './in-memory.ts';

const GROUP_VERSION = 'infrastructure.cluster.x-k8s.io/v1alpha1';

function dataFor(type: string, kind: string, name: string, extra: Record<string, unknown> = {}) {
  return type.includes('.ref.')
    ? { apiVersion: GROUP_VERSION, kind, name, namespace: 'team-a' }
    : {
        apiVersion: GROUP_VERSION,
        kind,
        metadata: { name, namespace: 'team-a', uid: 'u-1', resourceVersion: '7', ...extra },
      };
}

const modes = ['binary', 'structured'] as const;
const rows = API_SERVER_EVENT_TYPES.flatMap((type) =>
  modes.flatMap((mode) =>
    OBJECT_KINDS.map((kind) => ({ id: `${mode} ${type}`, name: kind, type, mode, kind })),
  ),
);

function send(t: ReturnType<typeof testApp>, mode: 'binary' | 'structured', type: string, data: unknown) {
  return mode === 'binary'
    ? t.app.inject({
        method: 'POST',
        url: '/events',
        headers: binaryHeaders(type),
        payload: JSON.stringify(data),
      })
    : t.app.inject({
        method: 'POST',
        url: '/events',
        headers: { ...auth, 'content-type': 'application/cloudevents+json' },
        payload: structuredBody(type, data),
      });
}

describe('POST /events: our kinds', () => {
  it.each(rows)(
    '$id $name: runs one step for the object and schedules its requeue',
    async ({ type, mode, kind }) => {
      const t = testApp();
      const response = await send(t, mode, type, dataFor(type, kind, 'c1'));
      expect(response.statusCode).toBe(200);
      const ref = { kind, namespace: 'team-a', name: 'c1' } as ObjectRef;
      expect(t.calls).toEqual([{ ref, options: {} }]);
      expect(t.schedule.dueAt(ref)).toBe(T0 + 600_000);
      expect(response.json()).toMatchObject({
        handled: true,
        outcome: { ref, action: 'none', reason: 'UpToDate' },
      });
    },
  );
});

describe('POST /events: owned objects map to their owner', () => {
  const owner: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm1' };
  const labels = {
    'captf.io/managed': 'true',
    'captf.io/owner-kind': 'TerraformMachine',
    'captf.io/owner-name': 'm1',
  };
  const owned = [
    { id: 'Job', name: 'batch/v1', kind: 'Job', apiVersion: 'batch/v1' },
    { id: 'Pod', name: 'v1', kind: 'Pod', apiVersion: 'v1' },
    { id: 'TerraformPlan', name: GROUP_VERSION, kind: 'TerraformPlan', apiVersion: GROUP_VERSION },
  ];

  /** What makes each owned kind's copy worth a step: a Job's end, a pod that cannot start. */
  const eventful: Record<string, Record<string, unknown>> = {
    Job: { status: { conditions: [{ type: 'Complete', status: 'True' }] } },
    Pod: {
      status: { containerStatuses: [{ name: 'source', state: { waiting: { reason: 'ErrImagePull' } } }] },
    },
    TerraformPlan: {},
  };

  it.each(owned)(
    '$id ($name) resource mode with owner labels: step for the owner, no live read',
    async (row) => {
      const t = testApp();
      const data = {
        apiVersion: row.apiVersion,
        kind: row.kind,
        metadata: { name: 'x-1', namespace: 'team-a', labels },
        ...eventful[row.kind],
      };
      const response = await send(t, 'binary', 'dev.knative.apiserver.resource.update', data);
      expect(response.statusCode).toBe(200);
      expect(t.calls.map((c) => c.ref)).toEqual([owner]);
      expect(t.owners.calls).toEqual([]);
    },
  );

  it('a Job that is running or already bookkept, judged from its copy: 200, no step', async () => {
    const t = testApp();
    const job = (resourceVersion: string, extra: Record<string, unknown>) => ({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'x-1', namespace: 'team-a', uid: 'j', resourceVersion, labels, ...extra },
    });
    const complete = { conditions: [{ type: 'Complete', status: 'True' }] };
    const answers = [];
    for (const data of [
      { ...job('1', {}), status: { active: 1 } },
      { ...job('2', {}), status: complete },
      { ...job('3', { annotations: { 'captf.io/bookkept': 'true' } }), status: complete },
    ]) {
      const response = await send(t, 'binary', 'dev.knative.apiserver.resource.update', data);
      answers.push(response.json().reason ?? 'step');
    }
    expect(answers).toEqual(['JobRunning', 'step', 'JobBookkept']);
    expect(t.calls.map((c) => c.ref)).toEqual([owner]);
  });

  it("a reference-mode event whose owner lookup found nothing a step reads changed: 200, the lookup's reason", async () => {
    const t = testApp({
      owners: { resolve: async () => ({ found: true, ref: owner, quiet: 'JobRunning' }) },
    });
    const data = { apiVersion: 'batch/v1', kind: 'Job', name: 'x-1', namespace: 'team-a' };
    const response = await send(t, 'binary', 'dev.knative.apiserver.ref.update', data);
    expect(response.json()).toEqual({ handled: false, reason: 'JobRunning' });
    expect(t.calls).toEqual([]);
  });

  it.each(owned)('$id ($name) reference mode: owner read live through the resolver', async (row) => {
    const t = testApp();
    t.owners.owners.set(`${row.kind}/team-a/x-1`, owner);
    const data = { apiVersion: row.apiVersion, kind: row.kind, name: 'x-1', namespace: 'team-a' };
    const response = await send(t, 'structured', 'dev.knative.apiserver.ref.add', data);
    expect(response.statusCode).toBe(200);
    expect(t.owners.calls).toEqual([{ kind: row.kind, namespace: 'team-a', name: 'x-1' }]);
    expect(t.calls.map((c) => c.ref)).toEqual([owner]);
  });

  it('a Job owned through an ownerReference (no owner labels) maps to that owner', async () => {
    const t = testApp();
    const data = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'captf-m-m1-apply-a1-abcdef',
        namespace: 'team-a',
        labels: { 'captf.io/managed': 'true' },
        ownerReferences: [{ apiVersion: GROUP_VERSION, kind: 'TerraformMachine', name: 'm1' }],
      },
    };
    const response = await send(t, 'binary', 'dev.knative.apiserver.resource.delete', data);
    expect(response.statusCode).toBe(200);
    expect(t.calls.map((c) => c.ref)).toEqual([owner]);
  });

  it('a reference-mode event whose object is gone is answered 200 and runs no step (the sweep heals)', async () => {
    const t = testApp();
    const data = { apiVersion: 'v1', kind: 'Pod', name: 'gone-pod', namespace: 'team-a' };
    const response = await send(t, 'binary', 'dev.knative.apiserver.ref.delete', data);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ handled: false, reason: 'ObjectGone' });
    expect(t.calls).toEqual([]);
  });

  it('a resource-mode event about a pod being deleted with our finalizer hands that pod to the step (issue 23 item 2)', async () => {
    const t = testApp();
    const pod = (extra: Record<string, unknown>) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'captf-m-m1-apply-a1-abcdef-x7k2p',
        namespace: 'team-a',
        uid: 'p-1',
        labels: { ...labels, 'captf.io/owner-uid': 'uid-m1' },
        // Its Job controls it (an orphaned pod that does not run is news: src/core/orphaned-pods.ts).
        ownerReferences: [
          {
            apiVersion: 'batch/v1',
            kind: 'Job',
            name: 'captf-m-m1-apply-a1-abcdef',
            uid: 'j-1',
            controller: true,
          },
        ],
        ...extra,
      },
    });
    const deleting = { deletionTimestamp: '2026-12-03T04:00:00Z' };
    await send(t, 'binary', 'dev.knative.apiserver.resource.update', {
      ...pod({ ...deleting, finalizers: ['captf.io/result'], resourceVersion: '8' }),
    });
    // A live pod, and a deleted one already released, change nothing the step reads: no step.
    const live = await send(
      t,
      'binary',
      'dev.knative.apiserver.resource.update',
      pod({ resourceVersion: '9' }),
    );
    const released = await send(t, 'binary', 'dev.knative.apiserver.resource.update', {
      ...pod({ ...deleting, finalizers: [], resourceVersion: '10' }),
    });
    expect([live.json(), released.json()]).toEqual([
      { handled: false, reason: 'PodUneventful' },
      { handled: false, reason: 'PodUneventful' },
    ]);
    expect(t.calls).toEqual([
      {
        ref: owner,
        options: {
          heldPod: { name: 'captf-m-m1-apply-a1-abcdef-x7k2p', ownerUid: 'uid-m1' },
          listJobs: true,
        },
      },
    ]);
  });

  it('a reference-mode pod event hands the pod the live read found held to the step; a live one is not', async () => {
    const t = testApp();
    t.owners.owners.set('Pod/team-a/p-held', owner);
    t.owners.owners.set('Pod/team-a/p-live', owner);
    t.owners.heldPods.set('team-a/p-held', { name: 'p-held', ownerUid: 'uid-m1' });
    for (const name of ['p-held', 'p-live'])
      await send(t, 'structured', 'dev.knative.apiserver.ref.update', {
        apiVersion: 'v1',
        kind: 'Pod',
        name,
        namespace: 'team-a',
      });
    expect(t.calls).toEqual([
      // A pod's news is the Job list's: the step lists the Jobs (src/core/jobs-read.ts).
      { ref: owner, options: { heldPod: { name: 'p-held', ownerUid: 'uid-m1' }, listJobs: true } },
      { ref: owner, options: { listJobs: true } },
    ]);
  });

  it('a held pod whose step found the step lock taken answers 429 (sent again), not 202: a requeue would lose the pod', async () => {
    const t = testApp({
      answer: () => ({ action: 'deferred', reason: 'StepLockHeld', requeueAfterSeconds: 2 }),
    });
    const held = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p-held',
        namespace: 'team-a',
        uid: 'p-1',
        resourceVersion: '8',
        labels: { ...labels, 'captf.io/owner-uid': 'uid-m1' },
        deletionTimestamp: '2026-12-03T04:00:00Z',
        finalizers: ['captf.io/result'],
      },
    };
    const first = await send(t, 'binary', 'dev.knative.apiserver.resource.update', held);
    expect(first.statusCode).toBe(429);
    expect(first.headers['retry-after']).toBe('1');
    // Not remembered as seen: the same delivery, sent again, reaches the step again.
    await send(t, 'binary', 'dev.knative.apiserver.resource.update', held);
    expect(t.calls).toHaveLength(2);
  });

  it('a Pod without our labels is not ours: 200, ignored', async () => {
    const t = testApp();
    const data = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 's', namespace: 'team-a', labels: { app: 'x' } },
    };
    const response = await send(t, 'binary', 'dev.knative.apiserver.resource.add', data);
    expect(response.json()).toEqual({ handled: false, reason: 'NotManaged' });
    expect(t.calls).toEqual([]);
  });

  it.each([
    { id: 'ConfigMap', name: 'core kind we do not watch', apiVersion: 'v1', kind: 'ConfigMap' },
    {
      id: 'Job/foreign-group',
      name: 'a Job kind from another group',
      apiVersion: 'example.com/v1',
      kind: 'Job',
    },
    {
      id: 'TerraformCluster/foreign-group',
      name: 'our kind name in another group',
      apiVersion: 'example.com/v1',
      kind: 'TerraformCluster',
    },
  ])('$id $name: 400 unsupported-event-kind naming the kind', async ({ apiVersion, kind }) => {
    const t = testApp();
    const response = await send(t, 'binary', 'dev.knative.apiserver.ref.add', {
      apiVersion,
      kind,
      name: 'a',
      namespace: 'n',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('unsupported-event-kind');
    expect(response.json().error.message).toContain(`unknown kind ${kind}`);
    expect(t.calls).toEqual([]);
  });
});

describe('POST /events: Cluster API objects reach the objects of ours they drive', () => {
  const CAPI = 'cluster.x-k8s.io/v1beta2';
  const machine: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'md-1-x' };
  const pool: ObjectRef = { kind: 'TerraformMachinePool', namespace: 'team-a', name: 'mp' };

  it.each([
    { id: 'Machine', name: 'its TerraformMachine', mode: 'ref', target: machine },
    { id: 'MachinePool', name: 'its TerraformMachinePool', mode: 'ref', target: pool },
  ] as const)(
    '$id → $name: the infrastructure reference read live, one step',
    async ({ id, mode, target }) => {
      const t = testApp();
      t.owners.owners.set(`${id}/team-a/x-1`, target);
      const data =
        mode === 'ref'
          ? { apiVersion: CAPI, kind: id, name: 'x-1', namespace: 'team-a' }
          : {
              apiVersion: CAPI,
              kind: id,
              metadata: { name: 'x-1', namespace: 'team-a', uid: 'u', resourceVersion: '3' },
            };
      const response = await send(t, 'binary', `dev.knative.apiserver.${mode}.update`, data);
      expect(response.statusCode).toBe(200);
      expect(t.owners.calls).toEqual([{ kind: id, namespace: 'team-a', name: 'x-1' }]);
      expect(t.calls.map((c) => c.ref)).toEqual([target]);
    },
  );

  it('a Machine in resource mode: its copy names the object of ours and says whether a step reads anything new', async () => {
    const t = testApp();
    const copy = (resourceVersion: string, version: string, extra: Record<string, unknown> = {}) => ({
      apiVersion: CAPI,
      kind: 'Machine',
      metadata: { name: 'x-1', namespace: 'team-a', uid: 'u', resourceVersion },
      spec: {
        clusterName: 'capi',
        version,
        infrastructureRef: {
          apiGroup: GROUP_VERSION.split('/')[0],
          kind: 'TerraformMachine',
          name: 'md-1-x',
        },
      },
      ...extra,
    });
    const answers = [];
    for (const data of [
      copy('3', 'v1.30.0'),
      copy('4', 'v1.30.0', { status: { phase: 'Provisioning' } }),
      copy('2', 'v1.29.0'),
      copy('5', 'v1.31.0'),
    ]) {
      const response = await send(t, 'binary', 'dev.knative.apiserver.resource.update', data);
      answers.push(response.json().reason ?? 'step');
    }
    expect(answers).toEqual(['step', 'Unchanged', 'Stale', 'step']);
    expect(t.owners.calls).toEqual([]);
    expect(t.calls.map((c) => c.ref)).toEqual([machine, machine]);
    const other = copy('6', 'v1.31.0');
    other.spec.infrastructureRef = {
      apiGroup: 'infrastructure.cluster.x-k8s.io',
      kind: 'DockerMachine',
      name: 'd',
    };
    const response = await send(t, 'binary', 'dev.knative.apiserver.resource.update', other);
    expect(response.json()).toEqual({ handled: false, reason: 'OwnerNotOurs' });
  });

  it('a Machine of another provider (nothing of ours named): 200, no step', async () => {
    const t = testApp();
    const data = { apiVersion: CAPI, kind: 'Machine', name: 'docker-1', namespace: 'team-a' };
    const response = await send(t, 'binary', 'dev.knative.apiserver.ref.update', data);
    expect(response.json()).toEqual({ handled: false, reason: 'ObjectGone' });
    expect(t.calls).toEqual([]);
  });

  it('a Cluster: no step; the members it outdated get a requeue due now', async () => {
    const t = testApp();
    t.clusterMembers.members.set('team-a/capi', [machine, pool]);
    const data = { apiVersion: CAPI, kind: 'Cluster', name: 'capi', namespace: 'team-a' };
    const response = await send(t, 'structured', 'dev.knative.apiserver.ref.update', data);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ handled: true, woken: [machine, pool] });
    expect(t.calls).toEqual([]);
    expect(t.schedule.dueAt(machine)).toBe(T0);
    expect(t.schedule.dueAt(pool)).toBe(T0);
  });

  it('a Cluster in resource mode: a copy whose pause and infrastructure did not change reads nothing', async () => {
    const t = testApp();
    t.clusterMembers.members.set('team-a/capi', [machine]);
    const copy = (resourceVersion: string, paused: boolean, extra: Record<string, unknown> = {}) => ({
      apiVersion: CAPI,
      kind: 'Cluster',
      metadata: { name: 'capi', namespace: 'team-a', uid: 'c', resourceVersion },
      spec: { paused },
      ...extra,
    });
    const answers = [];
    for (const data of [
      copy('3', false),
      copy('4', false, { status: { conditions: [{ type: 'Available', status: 'False' }] } }),
      copy('2', true),
      copy('5', true),
    ]) {
      const response = await send(t, 'binary', 'dev.knative.apiserver.resource.update', data);
      answers.push(response.json().reason ?? 'read');
    }
    expect(answers).toEqual(['read', 'Unchanged', 'Stale', 'read']);
    expect(t.clusterMembers.calls).toHaveLength(2);
  });

  it('a Cluster that is gone, or whose members are up to date: 200, nothing scheduled', async () => {
    const t = testApp();
    t.clusterMembers.members.set('team-a/settled', []);
    for (const name of ['gone', 'settled']) {
      const data = { apiVersion: CAPI, kind: 'Cluster', name, namespace: 'team-a' };
      const response = await send(t, 'binary', 'dev.knative.apiserver.ref.update', data);
      expect(response.statusCode).toBe(200);
    }
    expect(t.clusterMembers.calls.map((c) => c.name)).toEqual(['gone', 'settled']);
    expect(t.calls).toEqual([]);
    expect(t.schedule.dueAt(machine)).toBeUndefined();
  });

  it('a MachineSet (not watched): 400 unsupported-event-kind', async () => {
    const t = testApp();
    const data = { apiVersion: CAPI, kind: 'MachineSet', name: 'ms', namespace: 'team-a' };
    const response = await send(t, 'binary', 'dev.knative.apiserver.ref.update', data);
    expect(response.statusCode).toBe(400);
  });
});

describe('POST /events: duplicated, reordered and replayed deliveries', () => {
  const ref: ObjectRef = { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' };
  const resource = (rv: string) => ({
    apiVersion: GROUP_VERSION,
    kind: 'TerraformCluster',
    metadata: { name: 'c1', namespace: 'team-a', uid: 'uid-1', resourceVersion: rv },
  });

  it('the same uid@resourceVersion twice runs one step; the second answers Duplicate', async () => {
    const t = testApp();
    const first = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('10'));
    const second = await send(t, 'structured', 'dev.knative.apiserver.resource.update', resource('10'));
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect(second.json()).toEqual({ handled: false, reason: 'Duplicate' });
    expect(t.calls).toHaveLength(1);
  });

  it('a version a step wrote (marked as its own) starts nothing in Resource mode and records nothing', async () => {
    const t = testApp();
    t.dedupe.own.add('uid-1@10');
    const echo = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('10'));
    expect(echo.json()).toEqual({ handled: false, reason: 'OwnWrite' });
    expect(t.calls).toHaveLength(0);
    expect(t.dedupe.keys.size).toBe(0);
    expect(t.schedule.due.size).toBe(0);
    // An older version sent again (the event that started the step that wrote 10) is not stale: news.
    const retried = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('9'));
    expect(retried.json()).toMatchObject({ handled: true });
    // Its deletion is news whatever the mark says.
    const deleted = await send(t, 'binary', 'dev.knative.apiserver.resource.delete', resource('10'));
    expect(deleted.json()).toMatchObject({ handled: true });
    expect(t.calls).toHaveLength(2);
  });

  it("the echo of a write that beat the writer's mark: it waits for the running step, then is that step's own", async () => {
    const t = testApp();
    const running = 'TerraformCluster/team-a/c1';
    t.dedupe.running.add(running);
    // The writing step marks the version a moment after its event arrived, then ends.
    setTimeout(() => t.dedupe.own.add('uid-1@10'), 120);
    setTimeout(() => t.dedupe.running.delete(running), 400);
    const echo = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('10'));
    expect(echo.json()).toEqual({ handled: false, reason: 'OwnWrite' });
    expect(t.calls).toHaveLength(0);
    expect(t.schedule.due.size).toBe(0);
  });

  it('news that finds a step running waits for its end and then starts its own step, not a deferral', async () => {
    const running = 'TerraformCluster/team-a/c1';
    // Whether the other step still ran when this event's step started.
    const startedDuring: boolean[] = [];
    const t = testApp({
      answer: () => {
        startedDuring.push(t.dedupe.running.has(running));
        return {};
      },
    });
    t.dedupe.running.add(running);
    setTimeout(() => t.dedupe.running.delete(running), 120);
    const news = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('10'));
    expect(news.json()).toMatchObject({ handled: true });
    expect(startedDuring).toEqual([false]);
  });

  it("a reference-mode event of a version marked as a step's own is news: it cannot tell an echo from a retry", async () => {
    const t = testApp();
    t.versions.versions.set('TerraformCluster/team-a/c1', { uid: 'uid-1', resourceVersion: '11' });
    t.dedupe.own.add('uid-1@11');
    const data = dataFor('dev.knative.apiserver.ref.update', 'TerraformCluster', 'c1');
    const answer = await send(t, 'binary', 'dev.knative.apiserver.ref.update', data);
    expect(answer.json()).toMatchObject({ handled: true });
    expect(t.calls.map((c) => c.ref)).toEqual([ref]);
  });

  it("a late event of a version older than the one a timer step left is stale: no step (the relay's backlog)", async () => {
    const t = testApp({ answer: () => ({ observed: { uid: 'uid-1', resourceVersion: '20' } }) });
    // The timer's step (no event) read the object at 20 and wrote nothing.
    await t.deps.settle(ref, { log: t.deps.logger });
    expect(t.calls).toHaveLength(1);
    // The source, behind, now delivers the event of 15 (say the finalizer write, 40 s late).
    const late = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('15'));
    expect(late.json()).toEqual({ handled: false, reason: 'Stale' });
    expect(t.calls).toHaveLength(1);
  });

  it('reordered deliveries (rv 12 before rv 11): the older one is stale and runs no step', async () => {
    const t = testApp();
    await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('12'));
    const stale = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('11'));
    expect(stale.json()).toEqual({ handled: false, reason: 'Stale' });
    expect(t.calls.map((c) => c.ref)).toEqual([ref]);
    expect(t.schedule.due.size).toBe(1);
    expect(t.schedule.dueAt(ref)).toBe(T0 + 600_000);
  });

  it('a replay storm of reference-mode events (new ce-id each) converges to one schedule entry', async () => {
    const t = testApp();
    for (let i = 0; i < 5; i++) {
      const response = await send(
        t,
        'binary',
        'dev.knative.apiserver.ref.update',
        dataFor('dev.knative.apiserver.ref.update', 'TerraformCluster', 'c1'),
      );
      expect(response.statusCode).toBe(200);
    }
    expect(t.schedule.due.size).toBe(1);
    expect(t.schedule.dueAt(ref)).toBe(T0 + 600_000);
  });

  it('an event answered 503 is not remembered, so its redelivery runs the step again', async () => {
    let unavailable = true;
    const t = testApp({
      answer: () =>
        unavailable ? { action: 'unavailable', reason: 'Unavailable', requeueAfterSeconds: 3 } : {},
    });
    const first = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('20'));
    expect(first.statusCode).toBe(503);
    expect(first.headers['retry-after']).toBe('3');
    unavailable = false;
    const second = await send(t, 'binary', 'dev.knative.apiserver.resource.update', resource('20'));
    expect(second.statusCode).toBe(200);
    expect(t.calls).toHaveLength(2);
  });

  it('a deferred step (step lock held elsewhere) answers 202 and schedules the short requeue', async () => {
    const t = testApp({
      answer: () => ({ action: 'deferred', reason: 'StepLockHeld', requeueAfterSeconds: 2 }),
    });
    const response = await send(
      t,
      'binary',
      'dev.knative.apiserver.ref.update',
      dataFor('dev.knative.apiserver.ref.update', 'TerraformCluster', 'c1'),
    );
    expect(response.statusCode).toBe(202);
    expect(t.schedule.dueAt(ref)).toBe(T0 + 2000);
  });
});

describe('POST /events: reference mode, deduplicated by the version read live (issue 12)', () => {
  const ref: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm1' };
  const refEvent = (kind = 'TerraformMachine', name = 'm1') =>
    dataFor('dev.knative.apiserver.ref.add', kind, name);

  it('a replayed `add` of an unchanged object costs one version read and runs no second step', async () => {
    const t = testApp();
    const first = await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent());
    expect(first.json()).toMatchObject({ handled: true });
    for (let i = 0; i < 3; i++) {
      const replay = await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent());
      expect(replay.statusCode).toBe(200);
      expect(replay.json()).toEqual({ handled: false, reason: 'Duplicate' });
    }
    expect(t.calls).toHaveLength(1);
    expect(t.versions.reads).toEqual([ref, ref, ref, ref]);
  });

  it('the version the step left is remembered: the event its own write causes ends at the check', async () => {
    const t = testApp({ answer: () => ({ observed: { uid: 'uid-m1', resourceVersion: '2' } }) });
    await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent());
    // The step's status write moved the object to resourceVersion 2; the update event follows.
    t.versions.versions.set('TerraformMachine/team-a/m1', { uid: 'uid-m1', resourceVersion: '2' });
    const update = await send(t, 'structured', 'dev.knative.apiserver.ref.update', refEvent());
    expect(update.json()).toEqual({ handled: false, reason: 'Duplicate' });
    // In resource mode the payload carries the version: no read at all.
    const resource = await send(t, 'binary', 'dev.knative.apiserver.resource.update', {
      apiVersion: GROUP_VERSION,
      kind: 'TerraformMachine',
      metadata: { name: 'm1', namespace: 'team-a', uid: 'uid-m1', resourceVersion: '2' },
    });
    expect(resource.json()).toEqual({ handled: false, reason: 'Duplicate' });
    expect(t.calls).toHaveLength(1);
    expect(t.versions.reads).toHaveLength(2);
  });

  it('a change after the step (a new resourceVersion) runs the step again', async () => {
    const t = testApp();
    await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent());
    t.versions.versions.set('TerraformMachine/team-a/m1', { uid: 'uid-m1', resourceVersion: '5' });
    const update = await send(t, 'binary', 'dev.knative.apiserver.ref.update', refEvent());
    expect(update.json()).toMatchObject({ handled: true });
    expect(t.calls.map((c) => c.ref)).toEqual([ref, ref]);
  });

  it('an object that is gone is answered 200 ObjectGone without a step', async () => {
    const t = testApp();
    t.versions.versions.set('TerraformMachine/team-a/m1', 'gone');
    const response = await send(t, 'binary', 'dev.knative.apiserver.ref.delete', refEvent());
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ handled: false, reason: 'ObjectGone' });
    expect(t.calls).toEqual([]);
  });

  it('Job and Pod events always reach the step, even when the owner version was seen', async () => {
    const t = testApp();
    await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent());
    for (const kind of ['Job', 'Pod']) {
      t.owners.owners.set(`${kind}/team-a/x-1`, ref);
      const apiVersion = kind === 'Job' ? 'batch/v1' : 'v1';
      const response = await send(t, 'binary', 'dev.knative.apiserver.ref.update', {
        apiVersion,
        kind,
        name: 'x-1',
        namespace: 'team-a',
      });
      expect(response.json()).toMatchObject({ handled: true });
    }
    expect(t.calls).toHaveLength(3);
    expect(t.versions.reads).toHaveLength(1);
  });

  it('a step answered 503 remembers nothing: the redelivery runs the step', async () => {
    let unavailable = true;
    const t = testApp({
      answer: () => (unavailable ? { action: 'unavailable', reason: 'Unavailable' } : {}),
    });
    expect((await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent())).statusCode).toBe(503);
    unavailable = false;
    expect((await send(t, 'binary', 'dev.knative.apiserver.ref.add', refEvent())).statusCode).toBe(200);
    expect(t.calls).toHaveLength(2);
    expect(t.dedupe.keys).toEqual(new Set(['uid-m1@1']));
  });
});

describe('POST /events: CAPTF_WATCH_NAMESPACES', () => {
  it.each(rows.filter((row) => row.mode === 'binary'))(
    '$id $name in a namespace not watched: 200, ignored, no step, nothing scheduled',
    async ({ type, kind }) => {
      const t = testApp({ config: { watchNamespaces: ['team-b', 'team-c'] } });
      const response = await send(t, 'binary', type, dataFor(type, kind, 'c1'));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ handled: false, reason: 'NamespaceNotWatched' });
      expect(t.calls).toEqual([]);
      expect(t.schedule.dueAt({ kind, namespace: 'team-a', name: 'c1' } as ObjectRef)).toBeUndefined();
    },
  );

  it('a Job, a Pod and a Cluster API Cluster outside the watched namespaces are ignored before any read', async () => {
    const t = testApp({ config: { watchNamespaces: ['team-b'] } });
    for (const data of [
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j', namespace: 'team-a', labels: { 'captf.io/managed': 'true' } },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: 'team-a', labels: { 'captf.io/managed': 'true' } },
      },
      {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Cluster',
        metadata: { name: 'c', namespace: 'team-a' },
      },
    ]) {
      const response = await send(t, 'binary', 'dev.knative.apiserver.resource.update', data);
      expect(response.json()).toEqual({ handled: false, reason: 'NamespaceNotWatched' });
    }
    expect(t.calls).toEqual([]);
  });

  it('an object in a watched namespace is stepped as with every namespace watched', async () => {
    const t = testApp({ config: { watchNamespaces: ['team-a'] } });
    const type = 'dev.knative.apiserver.resource.update';
    const response = await send(t, 'binary', type, dataFor(type, 'TerraformMachine', 'm1'));
    expect(response.json()).toMatchObject({ handled: true });
    expect(t.calls).toEqual([
      { ref: { kind: 'TerraformMachine', namespace: 'team-a', name: 'm1' }, options: {} },
    ]);
  });
});
