import { describe, expect, it } from 'vitest';
import { planLines } from '../../../src/core/plan-text.ts';
import { parsePluginArgs, parseTarget } from '../../../src/core/plugin-args.ts';
import {
  type LastRunView,
  pickRun,
  type RunLogView,
  runHistory,
  runLogHeader,
  runTable,
} from '../../../src/core/run-history.ts';
import { decideUnlock, type UnlockFacts, unlockPatch } from '../../../src/core/unlock-check.ts';
import type { TerraformPlan } from '../../../src/schemas/kinds/terraform-plan.ts';

describe('kubectl captf arguments', () => {
  it('reads the verb, the object in any of its kind names and the kubectl flags anywhere', () => {
    expect(
      parsePluginArgs(['logs', 'tfm/m-a', '--op=apply', '--attempt', '2', '-n', 'team-a', '--as=alice']),
    ).toEqual({
      kind: 'run',
      verb: 'logs',
      target: { kind: 'TerraformMachine', name: 'm-a' },
      connection: { namespace: 'team-a', as: 'alice', asGroups: [] },
      op: 'apply',
      attempt: 2,
    });
    expect(parseTarget('terraformclusters/demo')).toEqual({ kind: 'TerraformCluster', name: 'demo' });
    expect(parseTarget('TerraformMachinePool/p')).toEqual({ kind: 'TerraformMachinePool', name: 'p' });
    expect(parsePluginArgs([])).toEqual({ kind: 'help' });
  });

  it('refuses what it does not know, and an object missing or extra', () => {
    expect(() => parsePluginArgs(['frobnicate'])).toThrow(/unknown command/);
    expect(() => parsePluginArgs(['plan'])).toThrow(/needs KIND\/NAME/);
    expect(() => parsePluginArgs(['status', 'tfm/a'])).toThrow(/takes no KIND\/NAME/);
    expect(() => parsePluginArgs(['plan', 'pods/a'])).toThrow(/unknown kind/);
    expect(() => parsePluginArgs(['plan', 'tfm/a', '--force'])).toThrow(/unknown flag/);
    expect(() => parsePluginArgs(['logs', 'tfm/a', '--attempt', '0'])).toThrow(/positive/);
  });
});

const job = (name: string, op: string, attempt: number, created: string, extra: object = {}) => ({
  metadata: {
    name,
    creationTimestamp: created,
    labels: { 'captf.io/op': op, 'captf.io/attempt': String(attempt) },
    ...extra,
  },
});

/** The kept log of run `j-gone` (apply, attempt 1), whose Job is gone, created at 00:02:00. */
function keptLogOfGoneJob(annotations: Record<string, string>): RunLogView {
  return {
    metadata: {
      name: 'captf-log-j-gone',
      creationTimestamp: '2026-01-02T00:02:00Z',
      labels: { 'captf.io/job': 'j-gone', 'captf.io/op': 'apply', 'captf.io/attempt': '1' },
      annotations,
    },
  };
}

describe('run history', () => {
  const jobs = [
    job('j-apply-1', 'apply', 1, '2026-01-01T00:00:00Z', {
      annotations: { 'captf.io/outcome': 'succeeded', 'captf.io/finished-at': '2026-01-01T00:01:00Z' },
    }),
    { ...job('j-apply-2', 'apply', 2, '2026-01-01T00:05:00Z'), status: { active: 1 } },
  ];
  const logs: RunLogView[] = [
    { metadata: { name: 'captf-log-j-apply-1', labels: { 'captf.io/job': 'j-apply-1' } } },
    {
      metadata: {
        name: 'captf-log-j-drift-1',
        creationTimestamp: '2025-12-31T00:00:00Z',
        labels: { 'captf.io/job': 'j-drift-1', 'captf.io/op': 'drift', 'captf.io/attempt': '1' },
      },
    },
  ];

  it('merges Jobs and kept logs of gone Jobs, newest first, with results and where the log is', () => {
    const rows = runHistory(jobs, logs, { job: 'j-drift-1', result: 'failed', reason: 'DriftJobFailed' });
    expect(rows.map((r) => [r.job, r.result, r.jobExists, r.logKept])).toEqual([
      ['j-apply-2', 'Running', true, false],
      ['j-apply-1', 'succeeded', true, true],
      ['j-drift-1', 'failed (DriftJobFailed)', false, true],
    ]);
    expect(pickRun(rows)?.job).toBe('j-apply-2');
    expect(pickRun(rows, 'apply', 1)?.job).toBe('j-apply-1');
    expect(pickRun(rows, 'destroy')).toBeUndefined();
    expect(runTable(rows)[3]).toMatch(/^j-drift-1\s+drift\s+1\s.*kept$/);
    expect(runHistory([], logs)[1]?.result).toBe('(job gone)');
  });

  it('the run the status records shows even when its Job went without a log (deleted by hand)', () => {
    const interrupted: LastRunView = {
      job: 'j-apply-1b',
      op: 'apply',
      attempt: 1,
      result: 'interrupted',
      reason: 'JobInterrupted',
      startedAt: '2026-01-01T00:02:00Z',
      finishedAt: '2026-01-01T00:03:00Z',
    };
    const retry = [{ ...job('j-apply-2', 'apply', 2, '2026-01-01T00:05:00Z'), status: { active: 1 } }];
    expect(
      runHistory(retry, [], interrupted).map((r) => [r.job, r.attempt, r.result, r.jobExists, r.logKept]),
    ).toEqual([
      ['j-apply-2', 2, 'Running', true, false],
      ['j-apply-1b', 1, 'interrupted (JobInterrupted)', false, false],
    ]);
    // Never twice: a recorded run whose Job or log is left is that row.
    expect(
      runHistory(jobs, logs, { ...interrupted, job: 'j-apply-1' }).filter((r) => r.job === 'j-apply-1'),
    ).toHaveLength(1);
  });

  const rows: {
    id: string;
    name: string;
    annotations: Record<string, string>;
    lastRun: LastRunView | undefined;
    finished: string | undefined;
  }[] = [
    {
      id: 'H1',
      name: "a gone Job's run is the status's lastRun: FINISHED is its finishedAt",
      annotations: {},
      lastRun: { job: 'j-gone', result: 'failed', finishedAt: '2026-01-02T00:03:00Z' },
      finished: '2026-01-02T00:03:00Z',
    },
    {
      id: 'H2',
      name: "an older run, logged by its runner as it exited: FINISHED is the log's creation",
      annotations: {},
      lastRun: { job: 'j-other', finishedAt: '2026-01-03T00:00:00Z' },
      finished: '2026-01-02T00:02:00Z',
    },
    {
      id: 'H3',
      name: "a log kept from the pod names its run's finish",
      annotations: { 'captf.io/log-source': 'pod-log', 'captf.io/finished-at': '2026-01-02T00:01:30Z' },
      lastRun: undefined,
      finished: '2026-01-02T00:01:30Z',
    },
    {
      id: 'H4',
      name: 'a log kept from the pod says nothing of the finish by its creation (bookkeeping wrote it later)',
      annotations: { 'captf.io/log-source': 'pod-log' },
      lastRun: undefined,
      finished: undefined,
    },
  ];
  it.each(rows)('$id $name', ({ annotations, lastRun, finished }) => {
    const [row] = runHistory([], [keptLogOfGoneJob(annotations)], lastRun);
    expect(row?.finishedAtMs).toBe(finished === undefined ? undefined : Date.parse(finished));
  });

  it.each<{
    id: string;
    name: string;
    annotations: Record<string, string>;
    lastRun: LastRunView;
    started: string;
  }>([
    {
      id: 'S1',
      name: "the status's lastRun, when it is that run: the Job's start, on the finish's clock",
      annotations: { 'captf.io/started-at': '2026-01-02T00:00:10Z' },
      lastRun: { job: 'j-gone', startedAt: '2026-01-02T00:00:05Z' },
      started: '2026-01-02T00:00:05Z',
    },
    {
      id: 'S2',
      name: "else the log's start: not its creation, made as the run ended",
      annotations: { 'captf.io/started-at': '2026-01-02T00:00:10Z' },
      lastRun: { job: 'j-other', startedAt: '2026-01-02T00:00:05Z' },
      started: '2026-01-02T00:00:10Z',
    },
    {
      id: 'S3',
      name: 'a log kept from the pod before that annotation: its finish, not its creation (made at bookkeeping)',
      annotations: { 'captf.io/log-source': 'pod-log', 'captf.io/finished-at': '2026-01-02T00:01:30Z' },
      lastRun: { job: 'j-other', startedAt: '2026-01-02T00:00:05Z' },
      started: '2026-01-02T00:01:30Z',
    },
    {
      id: 'S4',
      name: "a runner's log before that annotation: its creation, the run's end, the nearest time known",
      annotations: {},
      lastRun: { job: 'j-other', startedAt: '2026-01-02T00:00:05Z' },
      started: '2026-01-02T00:02:00Z',
    },
  ])('$id $name', ({ annotations, lastRun, started }) => {
    const [row] = runHistory([], [keptLogOfGoneJob(annotations)], lastRun);
    expect(row?.startedAtMs).toBe(Date.parse(started));
  });

  it('the kept log header says when the log was cut or is incomplete', () => {
    expect(runLogHeader('j', {})).toBe('# log of j, kept after its pod (complete)');
    expect(
      runLogHeader('j', { 'captf.io/log-truncated-bytes': '10', 'captf.io/log-complete': 'false' }),
    ).toBe(
      '# log of j, kept after its pod (truncated: the first 10 bytes are not kept; incomplete: the log could not be read to its end)',
    );
  });
});

describe('unlock checks (the stale state lock runbook)', () => {
  const lockInfo = (who: string) => JSON.stringify({ ID: 'L1', Operation: 'OperationTypeApply', Who: who });
  const base: UnlockFacts = {
    leaseName: 'lock-tfstate-default-m-a',
    lease: { holderIdentity: 'L1', lockInfo: lockInfo('bob@laptop') },
    ownJobNames: ['captf-m-a-apply-a1-abcdef'],
    pods: [],
    holderPod: undefined,
  };

  it('unlocks a foreign lock only when the caller names its id', () => {
    expect(decideUnlock(base)).toMatchObject({
      kind: 'refuse',
      message: expect.stringContaining('--lock-id L1'),
    });
    expect(decideUnlock({ ...base, lockId: 'L2' })).toMatchObject({ kind: 'refuse' });
    expect(decideUnlock({ ...base, lockId: 'L1' })).toMatchObject({
      kind: 'unlock',
      lock: { id: 'L1', who: 'bob@laptop' },
    });
    expect(unlockPatch('L1', true)[0]).toEqual({ op: 'test', path: '/spec/holderIdentity', value: 'L1' });
  });

  it('never unlocks while the object runs or its holder lives; leaves its own stale lock to the next Job', () => {
    expect(decideUnlock({ ...base, lockId: 'L1', activeJob: 'j' })).toMatchObject({ kind: 'refuse' });
    const running = { metadata: { name: 'captf-m-a-apply-a1-abcdef-x1y2z' }, status: { phase: 'Running' } };
    expect(decideUnlock({ ...base, lockId: 'L1', pods: [running] })).toMatchObject({ kind: 'refuse' });
    const own = {
      ...base,
      lease: { holderIdentity: 'L1', lockInfo: lockInfo('runner@captf-m-a-apply-a1-abcdef-x1y2z') },
    };
    expect(decideUnlock({ ...own, lockId: 'L1', holderPod: running })).toMatchObject({ kind: 'refuse' });
    expect(decideUnlock({ ...own, lockId: 'L1' })).toMatchObject({
      kind: 'nothing',
      message: expect.stringContaining('force-unlocks it itself'),
    });
    expect(decideUnlock({ ...base, lease: {} })).toMatchObject({ kind: 'nothing' });
    expect(decideUnlock({ ...base, leaseName: undefined })).toMatchObject({ kind: 'refuse' });
  });
});

describe('the readable plan', () => {
  it('lists each change with its sign, replacement paths, outputs and counts; no changes says where they are', () => {
    const plan = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'TerraformPlan',
      metadata: { name: 'p' },
      spec: {
        targetRef: { kind: 'TerraformMachine', name: 'm-b', uid: 'u' },
        inputsHash: 'h',
        digest: 'sha256:d',
        add: 1,
        change: 0,
        destroy: 1,
        destructive: true,
        job: 'j',
        approved: false,
        changes: {
          resources: [
            { address: 'terraform_data.server', action: 'replace', replacePaths: ['triggers_replace'] },
          ],
          omittedResources: 0,
          destructive: ['terraform_data.server'],
          outputs: [{ name: 'providerID', action: 'update' }],
          counts: {
            resources: 1,
            create: 0,
            update: 0,
            delete: 0,
            replace: 1,
            read: 0,
            forget: 0,
            outputs: 1,
          },
        },
      },
    } as TerraformPlan;
    const text = planLines(plan).join('\n');
    expect(text).toContain('-/+ terraform_data.server  replace');
    expect(text).toContain('forces replacement: triggers_replace');
    expect(text).toContain('outputs: providerID (update)');
    expect(text).toContain('(DESTRUCTIVE)');
    const { changes: _changes, ...bare } = plan.spec;
    expect(planLines({ ...plan, spec: bare }).join('\n')).toContain('kubectl logs job/j -c source');
  });
});
