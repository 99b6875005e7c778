import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parkedNode } from '../../env/parked-node.ts';
import {
  createStepEnv,
  eventsOf,
  eventually,
  finishJob,
  podOf,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// State locks (DESIGN.md section 12): a lock held by one of the object's own pods that is finished is stale;
// the next Job gets `force-unlock <id>` (never the controller itself), once; a foreign holder never.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('locks');
});

afterAll(async () => {
  await env?.close();
});

async function runConfigOf(job: string): Promise<Record<string, unknown>> {
  const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
  return JSON.parse(Buffer.from(secret?.data?.['run.json'] ?? '', 'base64').toString('utf8')) as Record<
    string,
    unknown
  >;
}

const LOCK_FAILURE = {
  kind: 'step' as const,
  step: 'plan' as const,
  summary: 'Error acquiring the state lock',
};

describe('stale state locks', () => {
  it('C06 follow-up: the OOM-killed pod still holds the lock; the next Job force-unlocks it once (ForceUnlocked), the one after never again', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-stale');
    const killed = (await podOf(env, job)).metadata?.name ?? '';
    await finishJob(env, job, { exitCode: 137, reason: 'OOMKilled' });
    await env.step()(ref);
    let offset = 0;
    const later = async (seconds: number) => {
      env.clock.advance(seconds);
      offset += seconds;
    };
    try {
      await later(61);
      const second = await stepUntil(env.step(), ref, 'created');
      expect(await runConfigOf(second.job ?? '')).not.toHaveProperty('forceUnlockId');
      await finishJob(env, second.job ?? '', {
        exitCode: 1,
        result: result('apply', 'failed', {
          error: LOCK_FAILURE,
          lock: { id: 'lock-7', who: `runner@${killed}` },
        }),
      });
      const bookkept = await env.step()(ref);
      // The holder is gone: a counted failure (not LockContended), whose lock the next Job unlocks.
      expect(bookkept.reason).toBe('Backoff');
      expect((await statusOf(env, ref)).lastRun?.reason).toBe('ApplyFailed');

      await later(121);
      const third = await stepUntil(env.step(), ref, 'created');
      expect(await runConfigOf(third.job ?? '')).toMatchObject({ forceUnlockId: 'lock-7' });
      expect((await eventsOf(env, ref)).filter((e) => e.reason === 'ForceUnlocked')).toHaveLength(1);
      await finishJob(env, third.job ?? '', {
        exitCode: 1,
        result: result('apply', 'failed', {
          error: LOCK_FAILURE,
          lock: { id: 'lock-7', who: `runner@${killed}` },
        }),
      });
      await env.step()(ref);

      await later(601);
      const fourth = await stepUntil(env.step(), ref, 'created');
      expect(await runConfigOf(fourth.job ?? '')).not.toHaveProperty('forceUnlockId');
    } finally {
      env.clock.advance(-offset);
    }
  });

  it('a lock held by a live pod of this object is LockContended, never force-unlocked', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-live-holder');
    const holder = await podOf(env, job);
    // A pod of this object's own naming holds the lock and is alive (Pending, not finished).
    const uid = holder.metadata?.labels?.['captf.io/owner-uid'] ?? '';
    const alive = await env.core.createNamespacedPod({
      namespace: env.namespace,
      body: {
        metadata: { name: `${job}-x1y2z`, labels: { 'captf.io/owner-uid': uid } },
        spec: {
          nodeName: await parkedNode(env.core),
          containers: [{ name: 'source', image: 'example.invalid/x:1' }],
        },
      },
    });
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: LOCK_FAILURE,
        lock: { id: 'lock-9', who: `runner@${alive.metadata?.name}` },
      }),
    });
    await env.step()(ref);
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({ job, reason: 'LockContended' });
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'ForceUnlocked')).toEqual([]);
  });

  it('DESIGN.md section 4: a contended lock waits 30 s from the run, uncounted, then the apply starts', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-contended');
    const holder = await podOf(env, job);
    const uid = holder.metadata?.labels?.['captf.io/owner-uid'] ?? '';
    const alive = await env.core.createNamespacedPod({
      namespace: env.namespace,
      body: {
        metadata: { name: `${job}-a1b2c`, labels: { 'captf.io/owner-uid': uid } },
        spec: {
          nodeName: await parkedNode(env.core),
          containers: [{ name: 'source', image: 'example.invalid/x:1' }],
        },
      },
    });
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: LOCK_FAILURE,
        lock: { id: 'lock-11', who: `runner@${alive.metadata?.name}` },
      }),
    });
    const bookkept = await env.step()(ref);
    expect(bookkept).toMatchObject({ action: 'bookkept', reason: 'LockContended' });
    expect(bookkept.requeueAfterSeconds).toBeGreaterThan(25);
    expect(bookkept.requeueAfterSeconds).toBeLessThanOrEqual(30);
    const redelivered = await env.step()(ref);
    expect(redelivered).toMatchObject({ action: 'waiting', reason: 'LockContended' });
    const status = await statusOf(env, ref);
    expect(status).toMatchObject({ waitReason: 'LockContended' });
    expect(Date.parse(status.nextAttemptAt ?? '') - env.clock.nowMs()).toBeGreaterThan(20_000);

    // The holder finishes its run (a pod of this object that is alive would hold the start by itself).
    await env.core.deleteNamespacedPod({
      namespace: env.namespace,
      name: alive.metadata?.name ?? '',
      gracePeriodSeconds: 0,
    });
    await eventually(
      () =>
        env.core.listNamespacedPod({ namespace: env.namespace, labelSelector: `captf.io/owner-uid=${uid}` }),
      (list) => list.items.every((pod) => pod.metadata?.name !== alive.metadata?.name),
      30_000,
      'the holder pod gone',
    );
    env.clock.advance(31);
    try {
      // Uncounted: no backoff follows the 30 s (a counted failure would wait 60 s).
      const next = await env.step()(ref);
      expect(next).toMatchObject({ action: 'created', reason: 'NoState' });
    } finally {
      env.clock.advance(-31);
    }
  });
});
