import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import {
  createStepEnv,
  eventsOf,
  eventually,
  finishJob,
  jobsOf,
  patchSpec,
  podOf,
  result,
  type StepEnv,
  startedObject,
  statusOf,
} from './harness.ts';

// Issue 23 item 8: what an operator deletes by hand heals. A deleted lock Lease (a manual unlock) comes
// back at the next start, a deleted state Secret only under the StateMissing rules, and the object's own
// stale lock is force-unlocked even when the holder's Job was pruned or deleted by the deadline enforcement.

let env: StepEnv;
let offset = 0;

beforeAll(async () => {
  env = await createStepEnv('healing');
});

afterAll(async () => {
  env?.clock.advance(-offset);
  await env?.close();
});

function later(seconds: number): void {
  env.clock.advance(seconds);
  offset += seconds;
}

/** Steps until the next Job starts, waiting out each backoff on the test clock. */
async function nextStart(ref: ObjectRef): Promise<string> {
  const last: string[] = [];
  for (let i = 0; i < 6; i += 1) {
    const outcome = await env.step()(ref);
    if (outcome.action === 'created') return outcome.job ?? '';
    if (outcome.reason === 'Backoff') later((outcome.requeueAfterSeconds ?? 0) + 1);
    last.push(`${outcome.reason}: ${outcome.message ?? ''}`);
  }
  throw new Error(`${ref.name}: no Job started: ${last.join(' | ')}`);
}

const stateSecret = (name: string) => `tfstate-default-m-${name}`;
const lockLease = (name: string) => `lock-tfstate-default-m-${name}`;

async function leaseExists(name: string): Promise<boolean> {
  return (await env.kube.reader.getLease(env.namespace, lockLease(name))) !== undefined;
}

async function runConfigOf(job: string): Promise<Record<string, unknown>> {
  const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
  return JSON.parse(Buffer.from(secret?.data?.['run.json'] ?? '', 'base64').toString('utf8')) as Record<
    string,
    unknown
  >;
}

/** An applied object whose status shows it provisioned. */
async function applied(name: string): Promise<ObjectRef> {
  const { ref, job } = await startedObject(env, 'TerraformMachine', name);
  await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
  expect((await env.step()(ref)).action).toBe('bookkept');
  return ref;
}

const LOCK_FAILURE = {
  kind: 'step' as const,
  step: 'plan' as const,
  summary: 'Error acquiring the state lock',
};

describe('what an operator deletes heals', () => {
  it('a lock Lease deleted by hand (a manual unlock) is put back by the next start', async () => {
    const ref = await applied('m-lease');
    await env.kube.writer.deleteLease(env.namespace, lockLease('m-lease'));
    expect(await leaseExists('m-lease')).toBe(false);
    await patchSpec(env, ref, { variables: { n: 2 } });
    expect((await env.step()(ref)).action).toBe('created');
    expect(await leaseExists('m-lease')).toBe(true);
  });

  it('a state Secret deleted by hand: put back (empty) for an object never provisioned, never for a provisioned one (StateMissing)', async () => {
    // Never provisioned: its first apply failed; nothing shows it ever held resources.
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-fresh');
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', { error: { kind: 'step', step: 'apply', summary: 'boom' } }),
    });
    await env.step()(ref);
    await env.kube.writer.deleteSecret(env.namespace, stateSecret('m-fresh'));
    await env.kube.writer.deleteLease(env.namespace, lockLease('m-fresh'));
    expect(await nextStart(ref)).not.toBe(job);
    const secret = await env.kube.reader.getSecret(env.namespace, stateSecret('m-fresh'));
    expect(secret).toBeDefined();
    expect(secret?.data?.tfstate).toBeUndefined();
    expect(await leaseExists('m-fresh')).toBe(true);

    // Provisioned: its apply waits StateMissing, and nothing puts an empty state back.
    const prov = await applied('m-prov');
    await env.kube.writer.deleteSecret(env.namespace, stateSecret('m-prov'));
    await patchSpec(env, prov, { variables: { n: 2 } });
    expect(await env.step()(prov)).toMatchObject({ action: 'waiting', reason: 'StateMissing' });
    expect(await env.kube.reader.getSecret(env.namespace, stateSecret('m-prov'))).toBeUndefined();
  });

  it("the object's own stale lock is force-unlocked when the holder's Job was pruned (failedJobsHistoryLimit: 1): pruning keeps the holder", async () => {
    const { ref, job: first } = await startedObject(env, 'TerraformMachine', 'm-pruned', {
      jobs: { failedJobsHistoryLimit: 1 },
    });
    const holder = (await podOf(env, first)).metadata?.name ?? '';
    await finishJob(env, first, { exitCode: 137, reason: 'OOMKilled' });
    await env.step()(ref);
    const second = await nextStart(ref);
    await finishJob(env, second, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: LOCK_FAILURE,
        lock: { id: 'lock-p', who: `runner@${holder}` },
      }),
    });
    // The step that records it may start the next Job at once (the backoff counts from the finish).
    const recorded = await env.step()(ref);
    const third = recorded.action === 'created' ? (recorded.job ?? '') : await nextStart(ref);
    // Above the failed limit, but its pod holds the lock the newest run reported: kept.
    expect((await jobsOf(env, ref)).map((j) => j.metadata?.name)).toContain(first);
    expect(await runConfigOf(third)).toMatchObject({ forceUnlockId: 'lock-p' });
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'ForceUnlocked')).toHaveLength(1);
  });

  it("the object's own stale lock is force-unlocked when the holder's Job was deleted by the deadline enforcement", async () => {
    const { ref, job: first } = await startedObject(env, 'TerraformMachine', 'm-deadline', {
      jobs: { activeDeadlineSeconds: 60, lockTimeoutSeconds: 30 },
    });
    const holder = (await podOf(env, first)).metadata?.name ?? '';
    // Past deadline + grace (600 s) + 60 s, the Job controller late: the step deletes the Job itself.
    later(60 + 600 + 61);
    const deleted = await env.step()(ref);
    expect(deleted.reason).toBe('JobDeadlineExceeded');
    await eventually(
      () => jobsOf(env, ref),
      (jobs) => !jobs.some((j) => j.metadata?.name === first),
      60_000,
      `${first} gone`,
    );
    await eventually(
      () => env.core.listNamespacedPod({ namespace: env.namespace, labelSelector: `job-name=${first}` }),
      (list) => list.items.length === 0,
      60_000,
      `${first}'s pod gone`,
    );
    const second = await nextStart(ref);
    await finishJob(env, second, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: LOCK_FAILURE,
        lock: { id: 'lock-d', who: `runner@${holder}` },
      }),
    });
    await env.step()(ref);
    expect((await statusOf(env, ref)).lastRun?.reason).toBe('ApplyFailed');
    const third = await nextStart(ref);
    // Named like this object's Jobs, its pod read live and gone: stale, not foreign.
    expect(await runConfigOf(third)).toMatchObject({ forceUnlockId: 'lock-d' });
  });
});
