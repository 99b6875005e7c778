import { describe, expect, it } from 'vitest';
import { type ClassifyInput, classifyJob, EVIDENCE, EVIDENCE_TABLE } from '../../../src/core/classify.ts';
import { RESULT_MAX_BYTES } from '../../../src/schemas/result.ts';
import { at, job, pod, result, T0 } from './builders.ts';

const ok = (r: object): string => JSON.stringify(r);
const applySucceeded = ok(
  result({ op: 'apply', result: 'succeeded', plan: { digest: 'sha256:a', add: 1, change: 0, destroy: 0 } }),
);
const applyStepFailed = ok(
  result({
    op: 'apply',
    result: 'failed',
    error: { kind: 'step', step: 'apply', summary: 'Error: quota exceeded' },
  }),
);
const failedJob = job([['Failed', 'BackoffLimitExceeded']]);
const deadlineJob = job([['Failed', 'DeadlineExceeded']]);
const completeJob = job([['Complete']], { succeeded: 1, completionTime: '2026-11-29T12:06:40.000Z' });

interface Row {
  id: string;
  name: string;
  input: Omit<ClassifyInput, 'now'>;
  expected: {
    result: string;
    reason: string;
    counted: boolean;
    kind?: string;
    warnings?: string[];
    status?: string;
  };
}

/** DESIGN.md section 7, one row per line of the table (and per op where the reason differs). */
const rows: Row[] = [
  {
    id: 'S7.1a',
    name: 'result succeeded (apply) → ApplySucceeded',
    input: {
      op: 'apply',
      job: completeJob,
      pods: [pod('p1', { exitCode: 0, message: applySucceeded }, { phase: 'Succeeded' })],
    },
    expected: { result: 'succeeded', reason: 'ApplySucceeded', counted: false, status: 'True' },
  },
  {
    id: 'S7.1b',
    name: 'result succeeded (destroy) → DestroySucceeded',
    input: {
      op: 'destroy',
      job: completeJob,
      pods: [pod('p1', { exitCode: 0, message: ok(result({ op: 'destroy', result: 'succeeded' })) })],
    },
    expected: { result: 'succeeded', reason: 'DestroySucceeded', counted: false },
  },
  {
    id: 'S7.1c',
    name: 'result succeeded (drift) → DriftChecked',
    input: {
      op: 'drift',
      job: completeJob,
      pods: [
        pod('p1', {
          exitCode: 0,
          message: ok(result({ op: 'drift', result: 'succeeded', drift: { detected: false } })),
        }),
      ],
    },
    expected: { result: 'succeeded', reason: 'DriftChecked', counted: false },
  },
  {
    id: 'S7.2a',
    name: 'result error kind step (apply) → ApplyFailed, counted',
    input: { op: 'apply', job: failedJob, pods: [pod('p1', { exitCode: 1, message: applyStepFailed })] },
    expected: { result: 'failed', reason: 'ApplyFailed', counted: true, kind: 'step', status: 'False' },
  },
  {
    id: 'S7.2b',
    name: 'result error kind step (destroy) → DestroyFailed, counted',
    input: {
      op: 'destroy',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 1,
          message: ok(
            result({
              op: 'destroy',
              result: 'failed',
              error: { kind: 'step', step: 'destroy', summary: 'x' },
            }),
          ),
        }),
      ],
    },
    expected: { result: 'failed', reason: 'DestroyFailed', counted: true, kind: 'step' },
  },
  {
    id: 'S7.2c',
    name: 'result error kind step (refresh) → DriftJobFailed, counted',
    input: {
      op: 'refresh',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 1,
          message: ok(
            result({
              op: 'refresh',
              result: 'failed',
              error: { kind: 'step', step: 'apply-refresh-only', summary: 'x' },
            }),
          ),
        }),
      ],
    },
    expected: { result: 'failed', reason: 'DriftJobFailed', counted: true, kind: 'step' },
  },
  {
    id: 'S7.3',
    name: 'result error kind image-layout → ImageInvalid, counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 1,
          message: ok(
            result({
              op: 'apply',
              result: 'failed',
              error: { kind: 'image-layout', step: 'prepare', summary: '/captf/runtime is missing' },
            }),
          ),
        }),
      ],
    },
    expected: { result: 'failed', reason: 'ImageInvalid', counted: true, kind: 'image-layout' },
  },
  {
    id: 'S7.3b',
    name: 'result error kind state-decryption (issue 25 item 3) → StateDecryptionFailed, counted',
    input: {
      op: 'destroy',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 1,
          message: ok(
            result({
              op: 'destroy',
              result: 'failed',
              error: {
                kind: 'state-decryption',
                step: 'init',
                summary: 'error loading state: decryption failed for all provided methods',
              },
            }),
          ),
        }),
      ],
    },
    expected: { result: 'failed', reason: 'StateDecryptionFailed', counted: true, kind: 'state-decryption' },
  },
  {
    id: 'S7.4',
    name: 'pod waited in ImagePullBackOff until the deadline → ImagePullFailed, counted',
    input: {
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { waiting: 'ImagePullBackOff' }, { phase: 'Failed', podReason: 'DeadlineExceeded' })],
    },
    expected: { result: 'failed', reason: 'ImagePullFailed', counted: true, kind: 'unknown' },
  },
  {
    id: 'S7.5a',
    name: 'Job DeadlineExceeded, runner wrote interrupted → JobDeadlineExceeded, counted, kind interrupted (it caught the kill)',
    input: {
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { exitCode: 1, message: ok(result({ op: 'apply', result: 'interrupted' })) })],
    },
    expected: { result: 'failed', reason: 'JobDeadlineExceeded', counted: true, kind: 'interrupted' },
  },
  {
    id: 'S7.5b',
    name: 'Job DeadlineExceeded on a drift check, no result → DriftJobDeadlineExceeded, counted, kind unknown',
    input: { op: 'drift', job: deadlineJob, pods: [pod('p1', { exitCode: 137 })] },
    expected: { result: 'failed', reason: 'DriftJobDeadlineExceeded', counted: true, kind: 'unknown' },
  },
  {
    id: 'S7.6',
    name: 'result interrupted without a deadline (eviction) → JobInterrupted, not counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [
        pod(
          'p1',
          { exitCode: 143, message: ok(result({ op: 'apply', result: 'interrupted' })) },
          { disrupted: true },
        ),
      ],
    },
    expected: {
      result: 'interrupted',
      reason: 'JobInterrupted',
      counted: false,
      status: 'Unknown',
      kind: 'interrupted',
    },
  },
  {
    id: 'S7.7a',
    name: 'result blocked by a destructive plan → DestructivePlanBlocked (Unknown), not counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 3,
          message: ok(
            result({
              op: 'apply',
              result: 'blocked',
              plan: { digest: 'sha256:d', add: 0, change: 0, destroy: 3, destructive: true },
            }),
          ),
        }),
      ],
    },
    expected: {
      result: 'blocked',
      reason: 'DestructivePlanBlocked',
      counted: false,
      status: 'Unknown',
      kind: 'blocked',
    },
  },
  {
    id: 'S7.7b',
    name: 'result blocked under Manual → PlanAwaitingApproval (Unknown), not counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 3,
          message: ok(
            result({
              op: 'apply',
              result: 'blocked',
              plan: { digest: 'sha256:d', add: 0, change: 1, destroy: 0 },
            }),
          ),
        }),
      ],
    },
    expected: {
      result: 'blocked',
      reason: 'PlanAwaitingApproval',
      counted: false,
      status: 'Unknown',
      kind: 'blocked',
    },
  },
  {
    id: 'S7.7c',
    name: 'result blocked from a runner that exits 0 (section 10: a plan that waits is no failed Job), the Job Complete → DestructivePlanBlocked, no warning',
    input: {
      op: 'apply',
      job: completeJob,
      pods: [
        pod(
          'p1',
          {
            exitCode: 0,
            message: ok(
              result({
                op: 'apply',
                result: 'blocked',
                plan: { digest: 'sha256:d', add: 0, change: 0, destroy: 1, destructive: true },
              }),
            ),
          },
          { phase: 'Succeeded' },
        ),
      ],
    },
    expected: {
      result: 'blocked',
      reason: 'DestructivePlanBlocked',
      counted: false,
      status: 'Unknown',
      kind: 'blocked',
    },
  },
  {
    id: 'S7.8b',
    name: 'result plan-changed, exit 0, the Job Complete → PlanChanged, no warning',
    input: {
      op: 'apply',
      job: completeJob,
      pods: [
        pod(
          'p1',
          { exitCode: 0, message: ok(result({ op: 'apply', result: 'plan-changed' })) },
          { phase: 'Succeeded' },
        ),
      ],
    },
    expected: {
      result: 'blocked',
      reason: 'PlanChanged',
      counted: false,
      status: 'Unknown',
      kind: 'plan-changed',
    },
  },
  {
    id: 'S7.8',
    name: 'result plan-changed from a runner of an earlier release (exit 5) → PlanChanged (Unknown), not counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 5, message: ok(result({ op: 'apply', result: 'plan-changed' })) })],
    },
    expected: {
      result: 'blocked',
      reason: 'PlanChanged',
      counted: false,
      status: 'Unknown',
      kind: 'plan-changed',
    },
  },
  {
    id: 'S7.9a',
    name: 'OOMKilled → ApplyFailed with kind unknown, counted',
    input: { op: 'apply', job: failedJob, pods: [pod('p1', { exitCode: 137, reason: 'OOMKilled' })] },
    expected: { result: 'failed', reason: 'ApplyFailed', counted: true, kind: 'unknown' },
  },
  {
    id: 'S7.9b',
    name: 'exit 137 without a result → ApplyFailed with kind unknown, counted',
    input: { op: 'apply', job: failedJob, pods: [pod('p1', { exitCode: 137, reason: 'Error' })] },
    expected: { result: 'failed', reason: 'ApplyFailed', counted: true, kind: 'unknown' },
  },
  {
    id: 'S7.9c',
    name: 'result truncated at the cap → ApplyFailed with kind unknown, counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [
        pod('p1', { exitCode: 1, message: `{"version":1,"op":"apply",${'x'.repeat(RESULT_MAX_BYTES)}` }),
      ],
    },
    expected: { result: 'failed', reason: 'ApplyFailed', counted: true, kind: 'unknown' },
  },
  {
    id: 'S7.9d',
    name: 'result not JSON → ApplyFailed with kind unknown, counted',
    input: {
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 1, message: 'panic: runtime error' })],
    },
    expected: { result: 'failed', reason: 'ApplyFailed', counted: true, kind: 'unknown' },
  },
  {
    id: 'S7.10',
    name: 'exit 0 with a succeeded result but Job DeadlineExceeded → succeeded with DeadlineRace, not counted',
    input: { op: 'apply', job: deadlineJob, pods: [pod('p1', { exitCode: 0, message: applySucceeded })] },
    expected: { result: 'succeeded', reason: 'ApplySucceeded', counted: false, warnings: ['DeadlineRace'] },
  },
  {
    id: 'S7.11a',
    name: 'exit 0 with a failed step result → failed (stricter), RunnerContractViolation',
    input: { op: 'apply', job: completeJob, pods: [pod('p1', { exitCode: 0, message: applyStepFailed })] },
    expected: {
      result: 'failed',
      reason: 'ApplyFailed',
      counted: true,
      kind: 'step',
      warnings: ['RunnerContractViolation'],
    },
  },
  {
    id: 'S7.11b',
    name: 'exit 1 with a succeeded result → failed (stricter), RunnerContractViolation',
    input: { op: 'apply', job: failedJob, pods: [pod('p1', { exitCode: 1, message: applySucceeded })] },
    expected: {
      result: 'failed',
      reason: 'ApplyFailed',
      counted: true,
      kind: 'unknown',
      warnings: ['RunnerContractViolation'],
    },
  },
];

describe('classifyJob: DESIGN.md section 7', () => {
  it.each(rows)('$id $name', ({ input, expected }) => {
    const c = classifyJob({ ...input, now: T0 });
    expect(c.result).toBe(expected.result);
    expect(c.reason).toBe(expected.reason);
    expect(c.counted).toBe(expected.counted);
    expect(c.error?.kind).toBe(expected.kind);
    expect(c.warnings).toEqual(expected.warnings ?? []);
    if (expected.status) expect(c.conditionStatus).toBe(expected.status);
  });

  it('every evidence has a row, and only failures that are not waits or interruptions count', () => {
    for (const evidence of EVIDENCE) {
      const row = EVIDENCE_TABLE[evidence];
      expect(row.counted).toBe(row.result === 'failed' && evidence !== 'lock-contended');
      if (row.counted) expect(row.conditionStatus).toBe('False');
    }
  });

  it('a lock that blocks the run (holder alive or foreign) is not counted (LockContended)', () => {
    const text = ok(
      result({
        op: 'apply',
        result: 'failed',
        error: { kind: 'step', step: 'plan', summary: 'state locked' },
        lock: { id: 'L1', who: 'root@captf-m-m-a-apply-a1-abcdef-x1y2z' },
      }),
    );
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 1, message: text })],
      lockBlocksRun: true,
      now: T0,
    });
    expect([c.reason, c.counted, c.conditionStatus]).toEqual(['LockContended', false, 'Unknown']);
  });

  it('the finish time comes from the Job, else the condition, else the clock', () => {
    expect(classifyJob({ op: 'apply', job: completeJob, pods: [], now: T0 }).finishedAt.toISOString()).toBe(
      '2026-11-29T12:06:40.000Z',
    );
    expect(classifyJob({ op: 'apply', job: failedJob, pods: [], now: T0 }).finishedAt).toEqual(at(400));
    const bare = { metadata: { name: 'J1' } };
    expect(classifyJob({ op: 'apply', job: bare, pods: [], now: T0 }).finishedAt).toEqual(T0);
  });
});

describe('classifyJob: field cases', () => {
  const p2LockError = ok(
    result({
      op: 'apply',
      result: 'failed',
      error: { kind: 'step', step: 'init', summary: 'Error acquiring the state lock' },
      lock: { id: 'L1', who: 'root@p1' },
    }),
  );
  const c01Pods = [
    pod('p1', { exitCode: 0, message: applySucceeded }, { createdAt: 0, phase: 'Succeeded' }),
    pod('p2', { exitCode: 1, message: p2LockError }, { createdAt: 180 }),
  ];

  it.each([
    ['P1 first', c01Pods],
    ['P2 first', [...c01Pods].reverse()],
  ])(
    'C01: two pods for one Job (%s): the pod with exit 0 and a valid result wins; P2 is named, not counted',
    (_, pods) => {
      const c = classifyJob({ op: 'apply', job: completeJob, pods, lockBlocksRun: true, now: T0 });
      expect(c.result).toBe('succeeded');
      expect(c.counted).toBe(false);
      expect(c.pod).toBe('p1');
      expect(c.extraPods).toEqual(['p2']);
      expect(c.warnings).toEqual(['ExtraPod']);
      expect(c.runnerResult?.lock).toBeUndefined();
    },
  );

  it('C06: OOM-killed at t=40 with no result → kind unknown, counted, reason visible in the summary', () => {
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 137, reason: 'OOMKilled' })],
      now: T0,
    });
    expect(c.counted).toBe(true);
    expect(c.error).toEqual({ kind: 'unknown', summary: expect.stringContaining('OOM-killed') });
  });

  it("a step killed by the OOM killer while the runner lives: the runner's error, and the OOM in the summary", () => {
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [
        pod('p1', {
          exitCode: 1,
          reason: 'OOMKilled',
          message: ok(
            result({
              op: 'apply',
              result: 'failed',
              error: { kind: 'step', step: 'init', summary: 'init was killed by SIGKILL' },
            }),
          ),
        }),
      ],
      now: T0,
    });
    expect(c.error?.summary).toBe(
      'init was killed by SIGKILL (the source container was OOM-killed; raise spec.jobs.resources.limits.memory)',
    );
    const plain = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 1, message: applyStepFailed })],
      now: T0,
    });
    expect(plain.error?.summary).toBe('Error: quota exceeded');
  });

  it('C08a: deadline kill with empty containerStatuses → JobDeadlineExceeded, counted, no parse error', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', 'no-status', { podReason: 'DeadlineExceeded' })],
      now: T0,
    });
    expect([c.reason, c.counted, c.error?.kind]).toEqual(['JobDeadlineExceeded', true, 'unknown']);
    expect(c.error?.summary).not.toMatch(/JSON|termination message/);
  });

  it('C08b: deadline kill with a container still running → JobDeadlineExceeded, counted', () => {
    const c = classifyJob({
      op: 'apply',
      job: { metadata: { name: 'J1' } },
      pods: [pod('p1', { running: true }, { phase: 'Failed', podReason: 'DeadlineExceeded' })],
      deadlineEnforced: true,
      now: T0,
    });
    expect([c.reason, c.counted]).toEqual(['JobDeadlineExceeded', true]);
  });

  it('C09: pull trouble seen while the Job ran, evidence gone at the deadline → ImagePullFailed, counted', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', 'no-status')],
      observedPullTrouble: true,
      now: T0,
    });
    expect([c.reason, c.counted, c.error?.kind]).toEqual(['ImagePullFailed', true, 'unknown']);
  });

  it('C09: InvalidImageName until the deadline → ImagePullFailed', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { waiting: 'InvalidImageName' })],
      now: T0,
    });
    expect(c.reason).toBe('ImagePullFailed');
  });

  it('C09: a pull that recovered and succeeded is a normal success', () => {
    const c = classifyJob({
      op: 'apply',
      job: completeJob,
      pods: [pod('p1', { exitCode: 0, message: applySucceeded })],
      observedPullTrouble: true,
      now: T0,
    });
    expect(c.reason).toBe('ApplySucceeded');
  });

  it('C09: pull trouble until the deadline, the never-started container reported terminated (137, ContainerStatusUnknown) → ImagePullFailed', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { exitCode: 137, reason: 'ContainerStatusUnknown', neverStarted: true })],
      observedPullTrouble: true,
      now: T0,
    });
    expect([c.reason, c.counted, c.error?.kind]).toEqual(['ImagePullFailed', true, 'unknown']);
  });

  it('C09: the same kill after the container had started is a deadline kill, not a pull failure', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { exitCode: 137, reason: 'ContainerStatusUnknown' })],
      observedPullTrouble: true,
      now: T0,
    });
    expect(c.reason).toBe('JobDeadlineExceeded');
  });

  it('C09: pull trouble seen, then the container ran and was OOM-killed → unknown, counted, not ImagePullFailed', () => {
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 137, reason: 'OOMKilled' })],
      observedPullTrouble: true,
      now: T0,
    });
    expect([c.reason, c.counted, c.error?.kind]).toEqual(['ApplyFailed', true, 'unknown']);
    expect(c.error?.summary).toContain('OOM-killed');
  });

  it('C09: pull trouble seen, the container ran and was still running at the deadline → JobDeadlineExceeded', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { running: true }, { podReason: 'DeadlineExceeded' })],
      observedPullTrouble: true,
      now: T0,
    });
    expect([c.reason, c.error?.kind]).toEqual(['JobDeadlineExceeded', 'unknown']);
  });

  it('C09: still in ImagePullBackOff but the Job failed before any deadline → not ImagePullFailed', () => {
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { waiting: 'ImagePullBackOff' })],
      observedPullTrouble: true,
      now: T0,
    });
    expect(c.error?.kind).toBe('unknown');
  });

  it('C10: a truncated result is kind unknown, counted, with a clear summary, never a success', () => {
    const cut = applySucceeded.slice(0, 40).padEnd(RESULT_MAX_BYTES, 'x');
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 1, message: cut })],
      now: T0,
    });
    expect([c.success, c.counted, c.error?.kind]).toEqual([false, true, 'unknown']);
    expect(c.error?.summary).toContain('truncated');
  });

  it('C11: exit 0 at D-0.1 with succeeded, Job succeeded:1 + Failed DeadlineExceeded, no completionTime → succeeded, DeadlineRace', () => {
    const raced = job([['Failed', 'DeadlineExceeded']], { succeeded: 1 });
    const c = classifyJob({
      op: 'apply',
      job: raced,
      pods: [pod('p1', { exitCode: 0, message: applySucceeded })],
      now: T0,
    });
    expect([c.result, c.success, c.counted, c.warnings]).toEqual([
      'succeeded',
      true,
      false,
      ['DeadlineRace'],
    ]);
  });

  it('C12a: exit 0 with error kind step → failed, RunnerContractViolation', () => {
    const c = classifyJob({
      op: 'apply',
      job: completeJob,
      pods: [pod('p1', { exitCode: 0, message: applyStepFailed })],
      now: T0,
    });
    expect([c.result, c.warnings]).toEqual(['failed', ['RunnerContractViolation']]);
  });

  it('C12b: exit 1 with no result → failed, kind unknown, counted', () => {
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [pod('p1', { exitCode: 1, message: '' })],
      now: T0,
    });
    expect([c.result, c.error?.kind, c.counted]).toEqual(['failed', 'unknown', true]);
  });

  it('C12c: a drift check that found changes is a successful check, never counted', () => {
    const text = ok(result({ op: 'drift', result: 'succeeded', drift: { detected: true, change: 2 } }));
    const c = classifyJob({
      op: 'drift',
      job: completeJob,
      pods: [pod('p1', { exitCode: 0, message: text })],
      now: T0,
    });
    expect([c.result, c.success, c.counted, c.runnerResult?.drift?.detected]).toEqual([
      'succeeded',
      true,
      false,
      true,
    ]);
  });

  it('a Job without any pod left is kind unknown, counted', () => {
    const c = classifyJob({ op: 'apply', job: failedJob, pods: [], now: T0 });
    expect([c.evidence, c.counted, c.pod]).toEqual(['unknown', true, undefined]);
  });

  it('a result for another op is a contract violation, never a success', () => {
    const text = ok(result({ op: 'destroy', result: 'succeeded' }));
    const c = classifyJob({
      op: 'apply',
      job: completeJob,
      pods: [pod('p1', { exitCode: 0, message: text })],
      now: T0,
    });
    expect([c.success, c.warnings]).toEqual([false, ['RunnerContractViolation']]);
  });
});
