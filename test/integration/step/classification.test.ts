import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import {
  createStepEnv,
  eventsOf,
  finishJob,
  jobFinished,
  type PodEnd,
  podOf,
  result,
  runPod,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Every row of DESIGN.md section 7's classification table, end to end: the played kubelet writes the pod's
// end, the real Job controller finishes the Job, and one step records it.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('classify');
});

afterAll(async () => {
  await env?.close();
});

const PLAN = { digest: `sha256:${'a'.repeat(64)}`, add: 0, change: 1, destroy: 3, destructive: true };
const LOCK_ERROR = {
  kind: 'step' as const,
  step: 'plan' as const,
  summary: 'Error acquiring the state lock',
};

interface Row {
  id: string;
  name: string;
  /** How the run ends: a pod end, or the Job's own deadline while the pod runs. */
  end: PodEnd | 'deadline';
  expected: { result: string; reason: string; errorKind?: string; warnings?: string[] };
  /** Counted failures wait out a backoff; the others do not. */
  counted: boolean;
  /** Plan waits for approval instead (blocked rows). */
  awaitsApproval?: boolean;
}

const rows: Row[] = [
  {
    id: 'R01',
    name: 'result succeeded is ApplySucceeded',
    end: { exitCode: 0, result: result('apply', 'succeeded') },
    expected: { result: 'succeeded', reason: 'ApplySucceeded' },
    counted: false,
  },
  {
    id: 'R02',
    name: 'error kind step is ApplyFailed, counted',
    end: {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: { kind: 'step', step: 'plan', summary: 'Error: Invalid value for variable' },
      }),
    },
    expected: { result: 'failed', reason: 'ApplyFailed', errorKind: 'step' },
    counted: true,
  },
  {
    id: 'R03',
    name: 'error kind image-layout is ImageInvalid, counted',
    end: {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: { kind: 'image-layout', step: 'prepare', summary: '/captf/module is missing' },
      }),
    },
    expected: { result: 'failed', reason: 'ImageInvalid', errorKind: 'image-layout' },
    counted: true,
  },
  {
    id: 'R04',
    name: 'Job DeadlineExceeded (runner still running) is JobDeadlineExceeded, counted',
    end: 'deadline',
    expected: { result: 'failed', reason: 'JobDeadlineExceeded', errorKind: 'unknown' },
    counted: true,
  },
  {
    id: 'R05',
    name: 'result interrupted without a deadline (eviction) is JobInterrupted, not counted (C07)',
    end: { exitCode: 143, disrupted: true, result: result('apply', 'interrupted') },
    expected: { result: 'interrupted', reason: 'JobInterrupted', errorKind: 'interrupted' },
    counted: false,
  },
  {
    id: 'R06',
    name: 'result blocked with a destructive plan is DestructivePlanBlocked, waits for approval',
    end: { exitCode: 3, result: result('apply', 'blocked', { plan: PLAN }) },
    expected: { result: 'blocked', reason: 'DestructivePlanBlocked', errorKind: 'blocked' },
    counted: false,
    awaitsApproval: true,
  },
  {
    id: 'R07',
    name: 'result blocked without destruction (Manual) is PlanAwaitingApproval',
    end: {
      exitCode: 3,
      result: result('apply', 'blocked', { plan: { ...PLAN, destroy: 0, destructive: false } }),
    },
    expected: { result: 'blocked', reason: 'PlanAwaitingApproval', errorKind: 'blocked' },
    counted: false,
    awaitsApproval: true,
  },
  {
    id: 'R08',
    name: 'result plan-changed is PlanChanged, waits for approval',
    end: {
      exitCode: 3,
      result: result('apply', 'plan-changed', { plan: { ...PLAN, digest: `sha256:${'b'.repeat(64)}` } }),
    },
    expected: { result: 'blocked', reason: 'PlanChanged', errorKind: 'plan-changed' },
    counted: false,
    awaitsApproval: true,
  },
  {
    id: 'R09',
    name: 'OOMKilled without a result is ApplyFailed kind unknown, counted (C06)',
    end: { exitCode: 137, reason: 'OOMKilled' },
    expected: { result: 'failed', reason: 'ApplyFailed', errorKind: 'unknown' },
    counted: true,
  },
  {
    id: 'R10',
    name: 'exit 137 without a result is kind unknown, counted',
    end: { exitCode: 137 },
    expected: { result: 'failed', reason: 'ApplyFailed', errorKind: 'unknown' },
    counted: true,
  },
  {
    id: 'R11',
    name: 'a truncated result is kind unknown with a clear summary, counted (C10)',
    end: {
      exitCode: 1,
      result: `{"version":1,"op":"apply","result":"failed","steps":[${'{"name":"init","exit":0,"seconds":1},'.repeat(120)}`,
    },
    expected: { result: 'failed', reason: 'ApplyFailed', errorKind: 'unknown' },
    counted: true,
  },
  {
    id: 'R12',
    name: 'C11: exit 0 and a valid succeeded result under a deadline verdict is succeeded with DeadlineRace',
    end: { exitCode: 0, podReason: 'DeadlineExceeded', result: result('apply', 'succeeded') },
    expected: { result: 'succeeded', reason: 'ApplySucceeded', warnings: ['DeadlineRace'] },
    counted: false,
  },
  {
    id: 'R13',
    name: 'C12a: exit 0 with an error result is failed with RunnerContractViolation',
    end: {
      exitCode: 0,
      result: result('apply', 'failed', {
        error: { kind: 'step', step: 'apply', summary: 'Error: apply failed' },
      }),
    },
    expected: {
      result: 'failed',
      reason: 'ApplyFailed',
      errorKind: 'step',
      warnings: ['RunnerContractViolation'],
    },
    counted: true,
  },
  {
    id: 'R14',
    name: 'C12b: exit 1 with no result is kind unknown, counted',
    end: { exitCode: 1 },
    expected: { result: 'failed', reason: 'ApplyFailed', errorKind: 'unknown' },
    counted: true,
  },
  {
    id: 'R15',
    // Issue 10, class 4: only another live pod of this object excuses a run; a foreign holder made the Job
    // wait out lockTimeoutSeconds and fail (DESIGN.md section 12), a counted step failure.
    name: 'a lock held by a foreign holder is a counted step failure (StateLocked), never an uncounted wait',
    end: {
      exitCode: 1,
      result: result('apply', 'failed', { error: LOCK_ERROR, lock: { id: 'lock-1', who: 'alice@laptop' } }),
    },
    expected: { result: 'failed', reason: 'ApplyFailed', errorKind: 'step' },
    counted: true,
  },
];

async function endRun(job: string, end: Row['end']): Promise<void> {
  if (end !== 'deadline') {
    await finishJob(env, job, end);
    return;
  }
  await runPod(env, await podOf(env, job));
  await jobFinished(env, job);
}

describe('DESIGN.md section 7 classification, through the step', () => {
  it.each(rows)('$id $name', async (row) => {
    const spec = row.end === 'deadline' ? { jobs: { activeDeadlineSeconds: 2, lockTimeoutSeconds: 1 } } : {};
    const name = `m-${row.id.toLowerCase()}`;
    const { ref, job } = await startedObject(env, 'TerraformMachine', name, {
      ...spec,
      ...(row.id === 'R07' ? { applyPolicy: 'Manual' } : {}),
    });
    await endRun(job, row.end);
    const outcome = await env.step()(ref);
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({ job, result: row.expected.result, reason: row.expected.reason });
    if (row.expected.errorKind) expect(status.lastRun?.error?.kind).toBe(row.expected.errorKind);
    else expect(status.lastRun?.error).toBeUndefined();
    expect(status.lastRun?.warnings ?? []).toEqual(expect.arrayContaining(row.expected.warnings ?? []));
    if (row.counted) {
      expect(outcome).toMatchObject({ action: 'bookkept', reason: 'Backoff' });
      expect(status.waitReason).toBe('Backoff');
      expect(status.nextAttemptAt).toBeDefined();
    } else if (row.awaitsApproval) {
      expect(outcome).toMatchObject({ action: 'bookkept', reason: 'AwaitingApproval' });
      expect(status.pendingPlanRef?.name).toBe(`${job}-plan`);
    } else {
      expect(status.waitReason).not.toBe('Backoff');
    }
  });

  it('R16 C12c: a drift check that finds changes is DriftChecked with DriftDetected=True, never counted', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-drift', {
      driftCheck: { interval: '1h' },
    });
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    env.clock.advance(2 * 3600);
    const drift = await stepUntil(env.step(), ref, 'created');
    expect(drift.reason).toBe('DriftDue');
    // Back to real time: the check finishes now, so the next one is an hour away.
    env.clock.advance(-2 * 3600);
    await finishJob(env, drift.job ?? '', {
      exitCode: 0,
      result: result('drift', 'succeeded', { drift: { detected: true, change: 2 } }),
    });
    await env.step()(ref);
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({
      job: drift.job,
      op: 'drift',
      result: 'succeeded',
      reason: 'DriftChecked',
      drift: { detected: true },
    });
    expect(status.conditions?.find((c) => c.type === 'DriftDetected')?.status).toBe('True');
    expect(status.conditions?.find((c) => c.type === 'DriftJobSucceeded')?.status).toBe('True');
    expect(status.waitReason).not.toBe('Backoff');
    expect((await eventsOf(env, ref)).map((e) => e.reason)).toContain('DriftDetected');
  });

  it('each Job is recorded once: a second step changes nothing about the recorded run', async () => {
    const ref: ObjectRef = { kind: 'TerraformMachine', namespace: env.namespace, name: 'm-r02' };
    const before = await statusOf(env, ref);
    await env.step()(ref);
    const after = await statusOf(env, ref);
    expect(after.lastRun).toEqual(before.lastRun);
    const failed = (await eventsOf(env, ref)).filter((e) => e.reason === 'JobFailed');
    expect(failed).toHaveLength(1);
  });
});
