import { KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { RUNNER_IDENTITY_ANNOTATION } from '../../../src/core/runner-identity.ts';
import { testStack } from '../../env/index.ts';
import {
  createStepEnv,
  eventsOf,
  eventually,
  finishJob,
  jobsOf,
  patchSpec,
  podOf,
  readObject,
  result,
  type StepEnv,
  startedObject,
  statusOf,
} from './harness.ts';

// Issue 23 item 8: what an operator deletes by hand heals. A deleted lock Lease (a manual unlock) or
// RoleBinding comes back at the next start once a run failed for it (issue 22: a Job-creating step reads
// the runner identity only when no check of it is remembered, and a run that did not succeed forgets the
// check), a deleted state Secret only under the StateMissing rules, and the object's own stale lock is
// force-unlocked even when the holder's Job was pruned or deleted by the deadline enforcement.

let env: StepEnv;
let offset = 0;

beforeAll(async () => {
  env = await createStepEnv('healing');
});

// Each case starts on the real time: a backoff one case waited out on the test clock is never another's.
afterEach(() => {
  env?.clock.advance(-offset);
  offset = 0;
});

afterAll(async () => {
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

/** The RoleBinding of an object's runner identity (src/core/runner-identity.ts), or undefined when gone. */
async function bindingOf(name: string) {
  return env.kube.reader.getRoleBinding(env.namespace, `captf-runner-m-${name}`);
}

/** The identity check Redis remembers for the object: the digest found complete, or null. */
async function rememberedCheck(ref: ObjectRef): Promise<string | null> {
  const uid = (await readObject(env, ref)).metadata.uid ?? '';
  return env.redis.client.get(env.redis.keys.identityCheck(uid));
}

/** What the runner's tofu reports when its account may not do what the backend asks. */
const FORBIDDEN = {
  kind: 'step' as const,
  step: 'init' as const,
  summary: 'Error: forbidden: User "system:serviceaccount:…" cannot get resource "secrets"',
};

const LOCK_FAILURE = {
  kind: 'step' as const,
  step: 'plan' as const,
  summary: 'Error acquiring the state lock',
};

describe('what an operator deletes heals', () => {
  it('a lock Lease deleted by hand (a manual unlock) is put back by the start after the run that failed for it', async () => {
    const ref = await applied('m-lease');
    expect(await rememberedCheck(ref)).toBe(
      (await bindingOf('m-lease'))?.metadata?.annotations?.[RUNNER_IDENTITY_ANNOTATION],
    );
    await env.kube.writer.deleteLease(env.namespace, lockLease('m-lease'));
    expect(await leaseExists('m-lease')).toBe(false);
    await patchSpec(env, ref, { variables: { n: 2 } });
    // The check is remembered: this start reads no Lease, and the runner may not create one.
    const job = await nextStart(ref);
    expect(await leaseExists('m-lease')).toBe(false);
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: { ...LOCK_FAILURE, summary: 'Error acquiring the state lock: leases is forbidden' },
      }),
    });
    expect((await env.step()(ref)).action).toBe('bookkept');
    expect(await rememberedCheck(ref)).toBeNull();
    expect(await nextStart(ref)).not.toBe(job);
    expect(await leaseExists('m-lease')).toBe(true);
  });

  it('a RoleBinding deleted after a remembered check: the run fails Forbidden once, the next start puts it back, and the object converges', async () => {
    const ref = await applied('m-binding');
    const digest = (await bindingOf('m-binding'))?.metadata?.annotations?.[RUNNER_IDENTITY_ANNOTATION];
    expect(digest).toBeDefined();
    expect(await rememberedCheck(ref)).toBe(digest);
    const config = new KubeConfig();
    config.loadFromFile(testStack().kubeconfigPath);
    await config
      .makeApiClient(RbacAuthorizationV1Api)
      .deleteNamespacedRoleBinding({ namespace: env.namespace, name: 'captf-runner-m-m-binding' });
    expect(await bindingOf('m-binding')).toBeUndefined();

    // The next start trusts the remembered check: its Job runs without the binding and fails Forbidden.
    await patchSpec(env, ref, { variables: { n: 2 } });
    const failed = await nextStart(ref);
    expect(await bindingOf('m-binding')).toBeUndefined();
    await finishJob(env, failed, { exitCode: 1, result: result('apply', 'failed', { error: FORBIDDEN }) });
    const bookkept = await env.step()(ref);
    expect(bookkept.action).toBe('bookkept');
    expect(await rememberedCheck(ref)).toBeNull();

    // The failure forgot the check: the next start (after the backoff) reads the identity, finds the binding
    // gone and puts it back, complete (its digest), and remembers it again.
    const retried = await nextStart(ref);
    expect(retried).not.toBe(failed);
    expect((await bindingOf('m-binding'))?.metadata?.annotations?.[RUNNER_IDENTITY_ANNOTATION]).toBe(digest);
    expect(await rememberedCheck(ref)).toBe(digest);
    await finishJob(env, retried, { exitCode: 0, result: result('apply', 'succeeded') });
    expect((await env.step()(ref)).action).toBe('bookkept');
    expect((await statusOf(env, ref)).lastRun).toMatchObject({ job: retried, result: 'succeeded' });
    expect(await env.step()(ref)).toMatchObject({ action: 'none', reason: 'UpToDate' });
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
