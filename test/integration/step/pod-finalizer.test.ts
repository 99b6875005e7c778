import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepListersOf, sweepPodsOf } from '../../../functions/compose.ts';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { runSecretName } from '../../../src/core/names.ts';
import { createMetrics } from '../../../src/metrics/registry.ts';
import { namedLease } from '../../../src/schedule/single-holder-lease.ts';
import { runSweepIfDue } from '../../../src/schedule/sweep.ts';
import { NO_DEPENDENTS } from '../../../src/settle/ports.ts';
import { createSettle } from '../../../src/settle/settle.ts';
import { bindToParkedNode } from '../../env/parked-node.ts';
import {
  createObject,
  createStepEnv,
  endPod,
  eventually,
  finishJob,
  jobFinished,
  jobsOf,
  patchSpec,
  podOf,
  pullTrouble,
  result,
  runPod,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Our pod finalizer `captf.io/result` (DESIGN.md section 7: never a lost result) through the real stack:
// a pod deleted before bookkeeping read it stays readable, and no pod is left Terminating afterwards.
// The test plays the kubelet (there is no node); the Job controller and the garbage collector are real.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('podfin');
});

afterAll(async () => {
  // Release whatever a failed test left held, so the namespace can go.
  const pods = await env?.core.listNamespacedPod({ namespace: env.namespace }).catch(() => undefined);
  for (const pod of pods?.items ?? []) {
    await env.kube.writer
      .removePodFinalizer(env.namespace, pod.metadata?.name ?? '', POD_RESULT_FINALIZER)
      .catch(() => undefined);
  }
  await env?.close();
});

async function readPod(name: string): Promise<V1Pod | undefined> {
  return env.core.readNamespacedPod({ namespace: env.namespace, name }).catch(() => undefined);
}

async function readSecret(name: string): Promise<V1Secret | undefined> {
  return env.core.readNamespacedSecret({ namespace: env.namespace, name }).catch(() => undefined);
}

/**
 * Deletes the Job as a client that sets no propagation policy does (batch/v1 orphans), and waits until the
 * garbage collector took the Job's owner reference off its pod and then let the Job go.
 */
async function deleteOrphaning(job: string, pod: string): Promise<void> {
  await env.batch.deleteNamespacedJob({ namespace: env.namespace, name: job, propagationPolicy: 'Orphan' });
  await eventually(
    () => readPod(pod),
    (read) => read !== undefined && (read.metadata?.ownerReferences ?? []).length === 0,
    30_000,
    `pod ${pod} orphaned`,
  );
  await eventually(
    () => env.batch.readNamespacedJob({ namespace: env.namespace, name: job }).catch(() => undefined),
    (read) => read === undefined,
    30_000,
    `Job ${job} gone`,
  );
}

async function podGone(name: string): Promise<void> {
  await eventually(
    () => readPod(name),
    (pod) => pod === undefined,
    30_000,
    `pod ${name} gone`,
  );
}

/** A sweep over this test's namespace only: other files' pods and Jobs are not this test's to judge. */
async function sweepNamespace(): Promise<unknown> {
  const listers = sweepListersOf(env.kube);
  const pods = sweepPodsOf(env.kube);
  const here = <T extends { namespace: string }>(items: T[]): T[] =>
    items.filter((item) => item.namespace === env.namespace);
  return runSweepIfDue({
    lease: namedLease(env.redis, 'sweep-podfin'),
    holder: 'pod-finalizer-test',
    listers: {
      listObjects: async () => [],
      listJobs: async () => here(await listers.listJobs()),
    },
    pods: {
      listPods: async () => here(await pods.listPods()),
      releasePod: pods.releasePod,
      deletePod: pods.deletePod,
    },
    settle: createSettle({
      step: env.step(),
      schedule: { add: async () => undefined },
      dedupe: { remember: async () => undefined },
      dependents: NO_DEPENDENTS,
      metrics: createMetrics(
        {
          jobTotals: async () => [],
          jobsActive: async () => 0,
          lastSuccesses: async () => [],
          objects: async () => [],
          sizes: async () => [],
        },
        () => undefined,
      ),
      clock: () => Date.now(),
    }),
    schedule: {
      add: async () => undefined,
      ensure: async () => undefined,
      claimDue: async () => [],
      complete: async () => undefined,
    },
    dedupe: { seen: async () => true },
    clock: () => Date.now(),
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    periodMs: 1000,
    concurrency: 1,
  });
}

describe('pod result finalizer', () => {
  it('C07: a pod deleted after it wrote `interrupted` is still read at bookkeeping (JobInterrupted, not counted), then released and gone', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-drained');
    const pod = await podOf(env, job);
    expect(pod.metadata?.finalizers).toContain(POD_RESULT_FINALIZER);
    await runPod(env, pod);
    // The drain deletes the pod; our finalizer keeps the object while the kubelet reports the runner's end.
    const name = pod.metadata?.name ?? '';
    await env.core.deleteNamespacedPod({ namespace: env.namespace, name, gracePeriodSeconds: 90 });
    const held = await readPod(name);
    expect(held?.metadata?.deletionTimestamp).toBeDefined();
    await endPod(env, pod, { exitCode: 3, result: result('apply', 'interrupted'), disrupted: true });
    await jobFinished(env, job);
    expect((await readPod(name))?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);

    // Bookkept from the held pod, and, not counted, retried on the same step (the API guard passes).
    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'created' });
    expect(outcome.job).not.toBe(job);
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({ job, result: 'interrupted', reason: 'JobInterrupted' });
    expect(status.waitReason).not.toBe('Backoff');
    await podGone(name);
  });

  it('C09: at the deadline the pod is deleted while pulling; the pull trouble still classifies the run ImagePullFailed (counted)', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-pull', {
      jobs: { activeDeadlineSeconds: 4, lockTimeoutSeconds: 1 },
    });
    const pod = await podOf(env, job);
    const name = pod.metadata?.name ?? '';
    await pullTrouble(env, pod, 'ImagePullBackOff');
    expect(await env.step()(ref)).toMatchObject({ action: 'watching', reason: 'ImagePullBackOff' });
    // The Job controller deletes the pod at the deadline; our finalizer keeps it and its pull evidence.
    const deleted = await eventually(
      () => readPod(name),
      (read) => read?.metadata?.deletionTimestamp !== undefined,
      30_000,
      `pod ${name} deleted at the deadline`,
    );
    expect(deleted?.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ImagePullBackOff');
    await jobFinished(env, job);

    const outcome = await env.step()(ref);
    expect(outcome).toMatchObject({ action: 'bookkept', reason: 'Backoff', job });
    expect((await statusOf(env, ref)).lastRun).toMatchObject({
      job,
      result: 'failed',
      reason: 'ImagePullFailed',
      error: { kind: 'unknown' },
    });
    await podGone(name);
  });

  it('C08: the step enforces a late deadline (records, then deletes the Job): the pod is released and goes with it', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-late', {
      jobs: { activeDeadlineSeconds: 600, lockTimeoutSeconds: 60 },
    });
    const pod = await podOf(env, job);
    await runPod(env, pod);
    expect(await env.step()(ref)).toMatchObject({ action: 'watching', reason: 'JobActive' });
    env.clock.advance(600 + 600 + 61);
    const late = await env
      .step()(ref)
      .finally(() => env.clock.advance(-(600 + 600 + 61)));
    expect(late).toMatchObject({ action: 'bookkept', reason: 'JobDeadlineExceeded', job });
    await podGone(pod.metadata?.name ?? '');
  });

  it('C14: a bookkept Job deleted by hand leaves no pod stuck Terminating (the sweep releases it)', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-by-hand');
    const name = (await podOf(env, job)).metadata?.name ?? '';
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    await env.batch.deleteNamespacedJob({
      namespace: env.namespace,
      name: job,
      propagationPolicy: 'Background',
    });
    // The garbage collector deletes the pod; only our finalizer holds it now.
    const stuck = await eventually(
      () => readPod(name),
      (read) => read?.metadata?.deletionTimestamp !== undefined,
      30_000,
      `pod ${name} deleted by the garbage collector`,
    );
    expect(stuck?.metadata?.finalizers).toEqual([POD_RESULT_FINALIZER]);

    expect(await sweepNamespace()).toMatchObject({ state: 'ran', podsReleased: 1 });
    await podGone(name);
  });

  it("C15: a running Job deleted by hand: the step that retries it releases the Job's held pod on the way", async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-deleted-running');
    const pod = await podOf(env, job);
    const name = pod.metadata?.name ?? '';
    await runPod(env, pod);
    await env.batch.deleteNamespacedJob({
      namespace: env.namespace,
      name: job,
      propagationPolicy: 'Background',
    });
    await eventually(
      () => readPod(name),
      (read) => read?.metadata?.deletionTimestamp !== undefined,
      30_000,
      `pod ${name} deleted by the garbage collector`,
    );
    // Unbound, the pod runs nowhere, so the API guard lets the retry start; the start read the pods, and the
    // pod of the gone Job goes with that step (it used to wait for the sweep: only bookkeeping released).
    const retried = await env.step()(ref);
    expect(retried).toMatchObject({ action: 'created' });
    expect(retried.job).not.toBe(job);
    await podGone(name);
  });

  it('C13: pruning a Job leaves no pod of it behind, the finalizer released with it', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-prune', {
      variables: { n: 1 },
      jobs: { successfulJobsHistoryLimit: 1 },
    });
    const first = (await stepUntil(env.step(), ref, 'created')).job ?? '';
    await finishJob(env, first, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    const firstPod = await podOf(env, first);
    // Bookkept but not deleted: the finalizer costs nothing until the Job goes.
    expect(firstPod.metadata?.finalizers).toContain(POD_RESULT_FINALIZER);
    await patchSpec(env, ref, { variables: { n: 2 } });
    const second = (await stepUntil(env.step(), ref, 'created')).job ?? '';
    await finishJob(env, second, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);

    expect((await jobsOf(env, ref)).map((j) => j.metadata?.name)).toEqual([second]);
    await podGone(firstPod.metadata?.name ?? '');
  });

  it('C13 by another client: a running Job deleted without propagation (batch/v1 orphans): its per-run Secret goes with the lost run, its pod once it ended; the retry waits for it', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-orphaned');
    const pod = await podOf(env, job);
    const name = pod.metadata?.name ?? '';
    // Bound to a node (the test plays its kubelet): a pod that runs is waited for, never deleted.
    await bindToParkedNode(env.core, env.namespace, name);
    await runPod(env, pod);
    expect(await readSecret(runSecretName(job))).toBeDefined();
    await deleteOrphaning(job, name);
    // The garbage collector orphaned the per-run Secret too: nothing would ever delete it.
    expect((await readSecret(runSecretName(job)))?.metadata?.ownerReferences ?? []).toEqual([]);

    const waiting = await env.step()(ref);
    expect(waiting).toMatchObject({ action: 'waiting', reason: 'WaitingForPreviousAttempt' });
    expect(await readSecret(runSecretName(job))).toBeUndefined();
    expect((await statusOf(env, ref)).activeJob).toBeUndefined();
    expect((await readPod(name))?.metadata?.deletionTimestamp).toBeUndefined();

    // The pod ends (its own deadline would end it if it did not): the retry starts and the pod goes.
    // No backend to play: its Job, which names the state, is gone, and nothing reads this result.
    await endPod(env, pod, { exitCode: 0, result: result('apply', 'succeeded'), realBackend: true });
    const retried = await env.step()(ref);
    expect(retried).toMatchObject({ action: 'created' });
    expect(retried.job).not.toBe(job);
    await podGone(name);
    expect((await podOf(env, retried.job ?? '')).spec?.activeDeadlineSeconds).toBe(3600);
  });

  it('C13 by another client: a finished Job deleted with orphaning before its bookkeeping: one step records the lost run and deletes its Secret and its held pod, then the retry starts', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-orphaned-ended');
    const name = (await podOf(env, job)).metadata?.name ?? '';
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    await deleteOrphaning(job, name);
    expect((await readPod(name))?.metadata?.finalizers).toContain(POD_RESULT_FINALIZER);

    const retried = await env.step()(ref);
    expect(retried).toMatchObject({ action: 'created' });
    expect(retried.job).not.toBe(job);
    expect(await readSecret(runSecretName(job))).toBeUndefined();
    await podGone(name);
  });

  it('C13 by another client: the sweep deletes an ended pod a bookkept Job deleted with orphaning left', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-orphaned-late');
    const name = (await podOf(env, job)).metadata?.name ?? '';
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    await deleteOrphaning(job, name);
    expect(await sweepNamespace()).toMatchObject({ state: 'ran', podsReleased: 1, podsDeleted: 1 });
    await podGone(name);
  });
});
