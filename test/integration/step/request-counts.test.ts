import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestCounts } from '../../../src/adapters/kube/request-count.ts';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import { waitFor } from '../../../src/core/wait-table.ts';
import { eventApp } from '../http/event-app.ts';
import {
  createObject,
  createStepEnv,
  finishJob,
  podOf,
  readObject,
  result,
  type StepEnv,
  stepUntil,
} from './harness.ts';

// API requests per step kind (issue 4, "Must show"), counted on the wire by the adapter's counter (spec
// patches of Cluster API contract fields included; none here: no contract output changes). Printed, and
// held under upper bounds.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('counts');
});

afterAll(async () => {
  await env?.close();
});

async function counted(ref: ObjectRef): Promise<{ outcome: StepOutcome; counts: RequestCounts }> {
  env.kube.takeRequestCounts();
  // Unshadowed: the dry run that shadows every other step's call would be counted too.
  const measured = await env.kube.measureRequests(() => env.step({ shadow: false })(ref));
  const counts = env.kube.takeRequestCounts();
  // The step's own tally (its log line's kubeRequests) is what the wire saw.
  expect(measured.requests).toBe(counts.total);
  return { outcome: measured.value, counts };
}

/**
 * A ready TerraformCluster `name` whose status another controller writes, labelled with its cluster name;
 * answers the label its members carry.
 */
async function readyCluster(name: string): Promise<Record<string, string>> {
  const label = { 'cluster.x-k8s.io/cluster-name': name };
  await createObject(
    env,
    'TerraformCluster',
    name,
    {},
    { labels: label, annotations: { 'cluster.x-k8s.io/managed-by': 'someone' } },
  );
  await env.custom.patchNamespacedCustomObjectStatus(
    {
      ...CUSTOM_RESOURCES.TerraformCluster,
      namespace: env.namespace,
      name,
      body: { status: { ready: true } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  return label;
}

/**
 * The object's first step: get object (no Job list: without our finalizer the preamble decides, from the
 * object alone, src/core/jobs-read.ts), patch the object's metadata (our finalizer); then, for the first Job,
 * the plan key Secret and the runner identity (src/core/runner-setup.ts), with no read of it first (the
 * object is new): the ServiceAccount, the state Secret, the Lease, the Role and the RoleBinding.
 */
const FINALIZER_STEP = {
  'get terraformmachines': 1,
  'patch terraformmachines': 1,
  'create secrets': 2,
  'create serviceaccounts': 1,
  'create leases': 1,
  'create roles': 1,
  'create rolebindings': 1,
};

/**
 * The first Job's step: get object, list Jobs (no pod list: no Job of the object was ever seen,
 * src/core/pods.ts), patch the object's metadata (Cluster API's block-move annotation, before the Job: issue
 * 23 item 6), create Job, read the plan key, create the per-run Secret, patch status, create Event. The
 * runner identity the finalizer step put in place is remembered in Redis as checked (issue 22,
 * src/step/runner-identity.ts): no read of its RoleBinding or Lease, and no blind create of the state Secret
 * the finalizer step made.
 */
const FIRST_JOB_STEP = {
  'get terraformmachines': 1,
  'list jobs': 1,
  'patch terraformmachines': 1,
  'create jobs': 1,
  'get secrets': 1,
  'create secrets': 1,
  'patch terraformmachines/status': 1,
  'create events': 1,
};

/**
 * A successful run's bookkeeping: get object, list Jobs, list pods, patch status, create Event, delete the
 * per-run Secret, patch the Job (mark), patch the object's metadata (the block-move annotation goes once
 * nothing runs). The state's size (captf_state_bytes, the CAPTFStateNearSecretLimit alert, issue 15) comes
 * in the runner's result, as its proxy saw the state Secret (issue 22): no read of it.
 */
const BOOKKEEPING_STEP = {
  'get terraformmachines': 1,
  'list jobs': 1,
  'list pods': 1,
  'patch terraformmachines/status': 1,
  'create events': 1,
  'delete secrets': 1,
  'patch jobs': 1,
  'patch terraformmachines': 1,
};

/** A member's live read of its cluster: the TerraformCluster of its label, the Cluster API Cluster. */
const CLUSTER_READ_LIVE = { 'list terraformclusters': 1, 'get clusters': 1 };

/**
 * Steps a new object past its finalizer into the wait `reason` (planned from the listed Jobs, and written),
 * then once more: answers that second look, the wait found again.
 */
async function waitFoundAgain(
  ref: ObjectRef,
  reason: string,
): Promise<{ outcome: StepOutcome; counts: RequestCounts }> {
  await stepUntil(env.step(), ref, 'none');
  const first = await counted(ref);
  expect(first.outcome).toMatchObject({ action: 'waiting', reason });
  expect(first.counts.byRequest['list jobs']).toBe(1);
  expect(first.counts.byRequest['patch terraformmachines/status']).toBe(1);
  const again = await counted(ref);
  expect(again.outcome).toMatchObject({ action: 'waiting', reason });
  return again;
}

function print(kind: string, counts: RequestCounts): void {
  console.log(`[request-counts] ${kind}: ${counts.total} requests ${JSON.stringify(counts.byRequest)}`);
}

describe('API requests per step', () => {
  it('no-op, Job-creating and bookkeeping steps stay within their budgets', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-count');
    const first = await counted(ref);
    expect(first.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });
    print('finalizer step (also creates the plan HMAC key Secret and the runner identity)', first.counts);
    expect(first.counts.byRequest).toEqual(FINALIZER_STEP);

    const create = await counted(ref);
    expect(create.outcome.action).toBe('created');
    print('Job-creating step (first)', create.counts);
    expect(create.counts.byRequest).toEqual(FIRST_JOB_STEP);
    expect(create.counts.total).toBe(8);

    await finishJob(env, create.outcome.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
    const bookkeep = await counted(ref);
    expect(bookkeep.outcome.action).toBe('bookkept');
    print('bookkeeping step', bookkeep.counts);
    expect(bookkeep.counts.byRequest).toEqual(BOOKKEEPING_STEP);
    expect(bookkeep.counts.total).toBe(8);
    expect(bookkeep.counts.byRequest['get pods/log'] ?? 0).toBe(0);

    const noop = await counted(ref);
    expect(noop.outcome).toMatchObject({ action: 'none', reason: 'UpToDate' });
    print('no-op step', noop.counts);
    // get object: nothing of it runs (no block-move annotation, no status.activeJob), so an idle plan needs
    // no Job list (src/core/jobs-read.ts), and nothing is written.
    expect(noop.counts.byRequest).toEqual({ 'get terraformmachines': 1 });

    await env.custom.patchNamespacedCustomObject(
      {
        group: 'infrastructure.cluster.x-k8s.io',
        version: 'v1alpha1',
        plural: 'terraformmachines',
        namespace: ref.namespace,
        name: ref.name,
        body: { spec: { variables: { n: 2 } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const second = await counted(ref);
    expect(second.outcome.action).toBe('created');
    print('Job-creating step (steady state)', second.counts);
    // The decision to start lists the Jobs (the object read alone showed nothing runs) and the pods (a Job
    // was seen before); an apply of a provisioned object reads its state Secret first (never applied from
    // lost state), beside the plan key: two Secret reads; the runner identity, remembered as checked since
    // no run failed, costs nothing; the block-move annotation is one metadata patch.
    expect(second.counts.byRequest).toEqual({
      'get terraformmachines': 1,
      'list jobs': 1,
      'list pods': 1,
      'get secrets': 2,
      'patch terraformmachines': 1,
      'create jobs': 1,
      'create secrets': 1,
      'patch terraformmachines/status': 1,
      'create events': 1,
    });
    expect(second.counts.total).toBe(10);
  });

  it("a cluster's member planned from cached cluster facts: a live read of the cluster only where the plan acts on it, its Jobs listed once a step", async () => {
    const label = await readyCluster('rc');
    // A first member reads the cluster live and fills the cache (the TerraformCluster, and that no Cluster
    // API Cluster of the name exists), as the first of a fleet's members does.
    const first = await createObject(env, 'TerraformMachine', 'rc-m0', {}, { labels: label });
    expect((await counted(first)).outcome.reason).toBe('FinalizerAdded');
    const ref = await createObject(env, 'TerraformMachine', 'rc-m1', {}, { labels: label });

    // The finalizer step acts on the facts (runner setup unless paused, the Job policy's account): planned
    // again from the cluster read live. The identity is created with no read of it first: the object is new.
    const finalizer = await counted(ref);
    expect(finalizer.outcome).toMatchObject({ action: 'none', reason: 'FinalizerAdded' });
    print('member finalizer step (cached facts, re-read live)', finalizer.counts);
    expect(finalizer.counts.byRequest).toEqual({ ...FINALIZER_STEP, ...CLUSTER_READ_LIVE });

    // The start is planned again from the cluster read live; its Jobs, listed for the first plan, are not
    // listed again for the second (src/step/read-memo.ts).
    const create = await counted(ref);
    expect(create.outcome.action).toBe('created');
    print('member Job-creating step (cached facts, re-read live)', create.counts);
    expect(create.counts.byRequest).toEqual({ ...FIRST_JOB_STEP, ...CLUSTER_READ_LIVE });

    // Bookkeeping a run with a contract output: the spec write (`spec.providerID`) reads no cluster fact, so
    // the plan is carried out from the cache.
    await finishJob(env, create.outcome.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded', { outputs: { providerID: 'demo://rc-m1' } }),
    });
    const bookkeep = await counted(ref);
    expect(bookkeep.outcome.action).toBe('bookkept');
    print('member bookkeeping step with a contract field (cached facts)', bookkeep.counts);
    // One more metadata patch than a bookkeeping without outputs: the spec's `providerID`.
    expect(bookkeep.counts.byRequest).toEqual({ ...BOOKKEEPING_STEP, 'patch terraformmachines': 2 });
    expect((await readObject(env, ref)).spec).toMatchObject({ providerID: 'demo://rc-m1' });
  });

  it('bookkeeping a run whose runner was killed (no result) reads its pod log once and may create its log: two more, only then', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-count-killed');
    await stepUntil(env.step(), ref, 'none');
    const create = await counted(ref);
    expect(create.outcome.action).toBe('created');

    // Killed outright (the OOM killer): exit 137 and no result, so no run log of its own.
    await finishJob(env, create.outcome.job ?? '', { exitCode: 137, reason: 'OOMKilled' });
    const bookkeep = await counted(ref);
    expect(bookkeep.outcome.action).toBe('bookkept');
    print('bookkeeping step of a killed runner', bookkeep.counts);
    // The failed bookkeeping budget (no state read after a failure: 8) plus the pod log read and, when the
    // log holds anything (no node serves this test's pods, so it holds nothing here), one Secret create.
    expect(bookkeep.counts.byRequest['get pods/log']).toBe(1);
    expect(bookkeep.counts.byRequest['create secrets'] ?? 0).toBeLessThanOrEqual(1);
    expect(bookkeep.counts.total).toBeLessThanOrEqual(8 + 2);
  });
  it('a wait found again unchanged (its safety requeue) costs the object and what it waits for: no Job list', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-count-wait', {
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 'm-count-not-yet', key: 'token' } }],
    });
    // Found again: the object's GET and the Secret it waits for (still missing), nothing written.
    const again = await waitFoundAgain(ref, 'WaitingForDependencies');
    print('wait found again (the safety requeue)', again.counts);
    expect(again.counts).toEqual({
      total: 2,
      byRequest: { 'get terraformmachines': 1, 'get secrets': 1 },
    });
    // Settled as the timer settles it: two reads, so the next look comes after twice the table's requeue
    // (src/core/safety-requeue.ts): at most 0.1 reads a minute for this waiting object.
    const events = await eventApp(env);
    try {
      const answer = await events.app.inject({
        method: 'POST',
        url: `/reconcile/${ref.kind}/${ref.namespace}/${ref.name}`,
      });
      const settled = answer.json() as { outcome: StepOutcome };
      expect(settled.outcome).toMatchObject({ action: 'waiting', reason: 'WaitingForDependencies' });
      const base = waitFor('WaitingForDependencies', {
        now: new Date(),
        uid: (await readObject(env, ref)).metadata.uid,
        message: '',
      }).requeueAfterSeconds;
      expect(settled.outcome.requeueAfterSeconds).toBe(2 * base);
      const due = await env.redis.schedule.scheduledAt(`${ref.kind}/${ref.namespace}/${ref.name}`);
      const inSeconds = due.kind === 'scheduled' ? (due.dueMs - Date.now()) / 1000 : 0;
      expect(inSeconds).toBeGreaterThan(2 * base - 60);
      expect(inSeconds).toBeLessThanOrEqual(2 * base);
    } finally {
      await events.close();
    }
  });
});

describe('API requests of a wait for the cluster operation', () => {
  it("a member's WaitingForClusterOperation found again costs its object (the lease read in Redis); a release whose wake was lost starts it at the next look", async () => {
    const label = await readyCluster('rb');
    // The cluster's apply holds the cluster lease, as its Job step takes it.
    const scope = {
      object: { kind: 'TerraformCluster' as const, namespace: env.namespace, name: 'rb' },
      clusterName: 'rb',
    };
    const clusterJob = 'captf-c-rb-apply-a1-aaaaaa';
    const taken = await env.redis.runLeases.take(scope, clusterJob, 'cluster-writer', 3600);
    if (taken.kind !== 'acquired') throw new Error('take the cluster lease');
    const ref = await createObject(env, 'TerraformMachine', 'rb-m', {}, { labels: label });
    // The start meets the lease; found again (its safety requeue): the object's GET; the cluster from the
    // cache, the lease from Redis.
    const again = await waitFoundAgain(ref, 'WaitingForClusterOperation');
    print('cluster operation wait found again (the safety requeue)', again.counts);
    expect(again.counts).toEqual({ total: 1, byRequest: { 'get terraformmachines': 1 } });
    // The lease released and its wake lost (a crash between the two): the next look starts the Job.
    expect((await env.redis.runLeases.release(scope, taken.token)).kind).toBe('released');
    const released = await counted(ref);
    expect(released.outcome.action).toBe('created');
  });
});

describe('API requests per event', () => {
  it('an event that changes nothing a step reads costs no request in Resource mode and one in Reference mode', async () => {
    const events = await eventApp(env);
    try {
      const ref = await createObject(env, 'TerraformMachine', 'm-events');
      await stepUntil(env.step(), ref, 'none');
      const created = await env.step({ shadow: false })(ref);
      expect(created.action).toBe('created');
      const job = created.job ?? '';

      // The step's own status write comes back. Before settling marked it seen (the step ran here without
      // settling), the step's own mark makes it start nothing; once seen, a duplicate whose content is now
      // known too.
      const copy = await events.copyOf(ref);
      const own = await events.deliver('resource', 'update', copy);
      expect(own.body).toMatchObject({ handled: false, reason: 'OwnWrite' });
      expect(own.counts.total).toBe(0);
      if (created.observed === undefined) throw new Error('the Job-creating step names the version it left');
      await env.redis.markEventSeen(created.observed, 3600);
      const echo = await events.deliver('resource', 'update', copy);
      expect(echo.body).toMatchObject({ handled: false, reason: 'Duplicate' });
      expect(echo.counts.total).toBe(0);

      // A label the step ignores, twice: the first version is never delivered before the second.
      const label = async (team: string) => {
        await env.custom.patchNamespacedCustomObject(
          {
            group: 'infrastructure.cluster.x-k8s.io',
            version: 'v1alpha1',
            plural: 'terraformmachines',
            namespace: ref.namespace,
            name: ref.name,
            body: { metadata: { labels: { team } } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return events.copyOf(ref);
      };
      const blue = await label('blue');
      const labelled = await label('green');
      const unchanged = await events.deliver('resource', 'update', labelled);
      expect(unchanged.body).toMatchObject({ handled: false, reason: 'Unchanged' });
      expect(unchanged.counts.total).toBe(0);
      print('event, a label the step ignores (Resource mode)', unchanged.counts);

      // The first label's event, late: older than a version handled.
      const stale = await events.deliver('resource', 'update', blue);
      expect(stale.body).toMatchObject({ handled: false, reason: 'Stale' });
      expect(stale.counts.total).toBe(0);

      const reference = await events.deliver('ref', 'update', labelled);
      expect(reference.body).toMatchObject({ handled: false, reason: 'Duplicate' });
      expect(reference.counts).toEqual({ total: 1, byRequest: { 'get terraformmachines': 1 } });
      print('event, the same version (Reference mode)', reference.counts);

      // A running Job's and a pending pod's status changes: judged from the copy, or from the owner
      // lookup's one GET in Reference mode.
      const runningJob = await env.batch.readNamespacedJob({ namespace: env.namespace, name: job });
      const jobEvent = await events.deliver('resource', 'update', {
        ...runningJob,
        apiVersion: 'batch/v1',
        kind: 'Job',
      });
      expect(jobEvent.body).toMatchObject({ handled: false, reason: 'JobRunning' });
      expect(jobEvent.counts.total).toBe(0);
      const jobRef = await events.deliver('ref', 'update', {
        ...runningJob,
        apiVersion: 'batch/v1',
        kind: 'Job',
      });
      expect(jobRef.body).toMatchObject({ handled: false, reason: 'JobRunning' });
      expect(jobRef.counts).toEqual({ total: 1, byRequest: { 'get jobs': 1 } });
      const pod = await podOf(env, job);
      const podEvent = await events.deliver('resource', 'update', { ...pod, apiVersion: 'v1', kind: 'Pod' });
      expect(podEvent.body).toMatchObject({ handled: false, reason: 'PodUneventful' });
      expect(podEvent.counts.total).toBe(0);
      const podRef = await events.deliver('ref', 'update', { ...pod, apiVersion: 'v1', kind: 'Pod' });
      expect(podRef.body).toMatchObject({ handled: false, reason: 'PodUneventful' });
      expect(podRef.counts).toEqual({ total: 1, byRequest: { 'get pods': 1 } });

      // The Job's end is what a step reads: its event runs the bookkeeping step; the mark's echo is quiet.
      const finished = await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
      const end = await events.deliver('resource', 'update', {
        ...finished,
        apiVersion: 'batch/v1',
        kind: 'Job',
      });
      expect(end.body.outcome?.action).toBe('bookkept');
      print('event, the Job finished (bookkeeping step)', end.counts);
      const marked = await env.batch.readNamespacedJob({ namespace: env.namespace, name: job });
      const markEcho = await events.deliver('resource', 'update', {
        ...marked,
        apiVersion: 'batch/v1',
        kind: 'Job',
      });
      expect(markEcho.body).toMatchObject({ handled: false, reason: 'JobBookkept' });
      expect(markEcho.counts.total).toBe(0);
    } finally {
      await events.close();
    }
  });
});
