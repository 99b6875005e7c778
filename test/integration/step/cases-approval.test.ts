import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { ADMIN_USER } from '../../../src/local/control-plane.ts';
import {
  createStepEnv,
  eventsOf,
  finishJob,
  jobsOf,
  patchSpec,
  result,
  type StepEnv,
  startedObject,
  statusOf,
} from './harness.ts';

// Field cases about plan approval (shared/cases/CASES.md): C18 and C19, through the step.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('approval');
});

afterAll(async () => {
  await env?.close();
});

const D1 = `sha256:${'d'.repeat(64)}`;
const D2 = `sha256:${'e'.repeat(64)}`;

async function plan(
  name: string,
): Promise<{ spec: { digest: string; approved: boolean }; status?: { phase?: string } }> {
  return (await env.custom.getNamespacedCustomObject({
    ...CUSTOM_RESOURCES.TerraformPlan,
    namespace: env.namespace,
    name,
  })) as {
    spec: { digest: string; approved: boolean };
    status?: { phase?: string };
  };
}

async function approve(name: string): Promise<void> {
  await env.custom.patchNamespacedCustomObject(
    {
      ...CUSTOM_RESOURCES.TerraformPlan,
      namespace: env.namespace,
      name,
      // The approval policy (infra/admission, installed with the CRDs) holds approvedBy to the requester.
      body: { spec: { approved: true, approvedBy: ADMIN_USER } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function runConfigOf(job: string): Promise<Record<string, unknown>> {
  const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
  return JSON.parse(Buffer.from(secret?.data?.['run.json'] ?? '', 'base64').toString('utf8')) as Record<
    string,
    unknown
  >;
}

async function plansOf(ref: ObjectRef): Promise<string[]> {
  const list = (await env.custom.listNamespacedCustomObject({
    ...CUSTOM_RESOURCES.TerraformPlan,
    namespace: env.namespace,
  })) as {
    items: { metadata: { name: string }; spec: { targetRef: { name: string } } }[];
  };
  return list.items.filter((item) => item.spec.targetRef.name === ref.name).map((item) => item.metadata.name);
}

describe('approval', () => {
  it('C19: approving is not a change: the apply of d1 starts with no new plan; redelivered approvals start at most one apply', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-c19');
    await finishJob(env, job, {
      exitCode: 3,
      result: result('apply', 'blocked', {
        plan: { digest: D1, add: 0, change: 0, destroy: 1, destructive: true },
      }),
    });
    expect(await env.step()(ref)).toMatchObject({ reason: 'AwaitingApproval' });
    const planName = `${job}-plan`;
    expect((await statusOf(env, ref)).pendingPlanRef?.name).toBe(planName);

    await approve(planName);
    const deliveries = await Promise.all([env.step()(ref), env.step()(ref), env.step()(ref)]);
    for (let i = 0; i < 3; i += 1) deliveries.push(await env.step()(ref));
    const created = deliveries.filter((outcome) => outcome.action === 'created');
    expect(created).toHaveLength(1);
    const applyJob = created[0]?.job ?? '';
    expect(await runConfigOf(applyJob)).toMatchObject({ expectedPlanDigest: D1 });
    expect(await jobsOf(env, ref)).toHaveLength(2);

    await finishJob(env, applyJob, {
      exitCode: 0,
      result: result('apply', 'succeeded', { plan: { digest: D1, add: 0, change: 0, destroy: 1 } }),
    });
    await env.step()(ref);
    expect((await plan(planName)).status?.phase).toBe('Applied');
    const status = await statusOf(env, ref);
    expect(status.pendingPlanRef).toBeUndefined();
    expect(status.lastRun).toMatchObject({ job: applyJob, result: 'succeeded' });
    expect(await plansOf(ref)).toEqual([planName]);
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'PlanApplied')).toHaveLength(1);
  });

  it('C19: once the approved apply is bookkept, the same step and the steps after it start no second apply', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-c19-once');
    await finishJob(env, job, {
      exitCode: 3,
      result: result('apply', 'blocked', {
        plan: { digest: D1, add: 0, change: 0, destroy: 1, destructive: true },
      }),
    });
    expect(await env.step()(ref)).toMatchObject({ reason: 'AwaitingApproval' });
    const planName = `${job}-plan`;
    await approve(planName);
    // Redelivered approval events: each runs a step; together they start one apply.
    const deliveries = await Promise.all([env.step()(ref), env.step()(ref)]);
    deliveries.push(await env.step()(ref));
    const created = deliveries.filter((outcome) => outcome.action === 'created');
    expect(created).toHaveLength(1);
    const applyJob = created[0]?.job ?? '';
    expect(await runConfigOf(applyJob)).toMatchObject({ expectedPlanDigest: D1 });

    await finishJob(env, applyJob, {
      exitCode: 0,
      result: result('apply', 'succeeded', { plan: { digest: D1, add: 0, change: 0, destroy: 1 } }),
    });
    // The step that bookkeeps the apply decides on the plan as it leaves it (Applied), not as it read it.
    expect(await env.step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    const later = await Promise.all([env.step()(ref), env.step()(ref)]);
    for (let i = 0; i < 3; i += 1) later.push(await env.step()(ref));
    expect(later.filter((outcome) => outcome.action === 'created')).toEqual([]);
    expect(later.at(-1)).toMatchObject({ action: 'none', reason: 'UpToDate' });
    const names = (await jobsOf(env, ref)).map((j) => j.metadata?.name);
    expect(names.every((name) => name === job || name === applyJob)).toBe(true);
    expect(names).toContain(applyJob);
    expect((await plan(planName)).status?.phase).toBe('Applied');
  });

  it('C18: an approval reused for a different plan: the input change supersedes it and the new destructive plan waits for its own approval', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-c18', {
      applyPolicy: 'Manual',
      variables: { v: 1 },
    });
    await finishJob(env, job, {
      exitCode: 3,
      result: result('apply', 'blocked', { plan: { digest: D1, add: 0, change: 1, destroy: 0 } }),
    });
    await env.step()(ref);
    const p1 = `${job}-plan`;
    await approve(p1);

    await patchSpec(env, ref, { variables: { v: 2 } });
    const next = await env.step()(ref);
    expect(next.action).toBe('created');
    expect((await plan(p1)).status?.phase).toBe('Superseded');
    expect(await runConfigOf(next.job ?? '')).not.toHaveProperty('expectedPlanDigest');

    await finishJob(env, next.job ?? '', {
      exitCode: 3,
      result: result('apply', 'blocked', {
        plan: { digest: D2, add: 0, change: 0, destroy: 3, destructive: true },
      }),
    });
    expect(await env.step()(ref)).toMatchObject({ reason: 'AwaitingApproval' });
    const status = await statusOf(env, ref);
    const p2 = `${next.job}-plan`;
    expect(status.pendingPlanRef?.name).toBe(p2);
    expect(await plan(p2)).toMatchObject({ spec: { digest: D2, approved: false } });
    expect((await plan(p1)).status?.phase).toBe('Superseded');
    expect(status.lastRun).toMatchObject({ result: 'blocked', reason: 'DestructivePlanBlocked' });
    // No Job ever ran under the old approval (the first, superseded waiting run may be pruned).
    const jobs = await jobsOf(env, ref);
    expect(jobs.map((j) => j.metadata?.name)).toContain(next.job);
    expect(jobs.every((j) => j.metadata?.annotations?.['captf.io/expected-plan-digest'] === undefined)).toBe(
      true,
    );
  });
});
