import { describe, expect, it } from 'vitest';
import { type DecideInput, decideOp, driftDueMs, refreshDueMs } from '../../../src/core/decide.ts';
import { applyGates, type GateInput } from '../../../src/core/gates.ts';
import { jitterFraction, MAX_JITTER_FRACTION } from '../../../src/core/jitter.ts';
import { at, iso, record, T0 } from './builders.ts';

const UID = '6f1c2a8e-0000-4000-8000-000000000001';
const HOUR = 3600;

/** An object applied once at T0 - 10 min with inputs h1, nothing else going on. */
function input(overrides: Partial<DecideInput> = {}): DecideInput {
  return {
    now: T0,
    uid: UID,
    deleting: false,
    inputsHash: 'h1',
    appliedInputsHash: 'h1',
    lastSuccess: { apply: iso(-600) },
    hasRun: true,
    driftDetected: false,
    records: [record('apply', 'succeeded', -600)],
    driftCheck: { enabled: true, action: 'Report' },
    failedJobsHistoryLimit: 3,
    ...overrides,
  };
}

/** DESIGN.md section 3, rows 0-10 in order; each row also shows it wins over the rows below it. */
const rows: { id: string; name: string; input: DecideInput; expected: object }[] = [
  {
    id: 'S3.0',
    name: 'a Job of the object is not finished → watch it (JobActive)',
    input: input({
      records: [
        record('apply', 'succeeded', -600),
        record('drift', 'succeeded', 0, { finished: false, bookkept: false }),
      ],
      deleting: true,
    }),
    expected: { kind: 'watch', reason: 'JobActive', requeueAfterSeconds: 300 },
  },
  {
    id: 'S3.0b',
    name: 'a finished Job not yet bookkept counts as active (nothing starts before bookkeeping)',
    input: input({ records: [record('apply', 'step-failed', -5, { bookkept: false })] }),
    expected: { kind: 'watch', reason: 'JobActive' },
  },
  {
    id: 'S3.1',
    name: 'deleting, nothing was ever applied → drop finalizer (DeletingWithoutState)',
    input: input({
      deleting: true,
      lastSuccess: {},
      hasRun: false,
      records: [],
      appliedInputsHash: undefined,
    }),
    expected: { kind: 'finalize', reason: 'DeletingWithoutState' },
  },
  {
    id: 'S3.1b',
    name: 'deleting, nothing recorded, but the state holds resources (a lost status) → destroy (Deleting)',
    input: input({
      deleting: true,
      lastSuccess: {},
      hasRun: false,
      records: [],
      appliedInputsHash: undefined,
      stateMayHoldResources: true,
    }),
    expected: { kind: 'start', op: 'destroy', reason: 'Deleting' },
  },
  {
    id: 'S3.1c',
    name: 'deleting, nothing recorded, the state read and empty → drop finalizer (DeletingWithoutState)',
    input: input({
      deleting: true,
      lastSuccess: {},
      hasRun: false,
      records: [],
      appliedInputsHash: undefined,
      stateMayHoldResources: false,
    }),
    expected: { kind: 'finalize', reason: 'DeletingWithoutState' },
  },
  {
    id: 'S3.1e',
    name: 'deleting, every apply failed, the state read and empty → drop finalizer without a destroy',
    input: input({
      deleting: true,
      lastSuccess: {},
      appliedInputsHash: undefined,
      records: [record('apply', 'step-failed', -600), record('apply', 'step-failed', -60)],
      stateMayHoldResources: false,
    }),
    expected: { kind: 'finalize', reason: 'DeletingWithoutState' },
  },
  {
    id: 'S3.1f',
    name: 'deleting, every apply failed, the state unread (another backend) → destroy',
    input: input({
      deleting: true,
      lastSuccess: {},
      appliedInputsHash: undefined,
      records: [record('apply', 'step-failed', -60)],
    }),
    expected: { kind: 'start', op: 'destroy', reason: 'Deleting' },
  },
  {
    id: 'S3.1g',
    name: 'deleting, applied once, an empty state never overrides the recorded apply → destroy',
    input: input({ deleting: true, stateMayHoldResources: false }),
    expected: { kind: 'start', op: 'destroy', reason: 'Deleting' },
  },
  {
    id: 'S3.1b',
    name: 'deleting after a successful destroy → drop finalizer (DeletingWithoutState)',
    input: input({ deleting: true, lastSuccess: { apply: iso(-600), destroy: iso(-60) } }),
    expected: { kind: 'finalize', reason: 'DeletingWithoutState' },
  },
  {
    id: 'S3.1d',
    name: 'the copy clusterctl move deletes (delete-for-move) → drop finalizer (DeletingForMove), applied or not',
    input: input({ deleting: true, deletingForMove: true, stateMayHoldResources: true }),
    expected: { kind: 'finalize', reason: 'DeletingForMove' },
  },
  {
    id: 'S3.2',
    name: 'deleting → destroy (Deleting), even with changed inputs',
    input: input({ deleting: true, inputsHash: 'h2' }),
    expected: { kind: 'start', op: 'destroy', reason: 'Deleting' },
  },
  {
    id: 'S3.2b',
    name: 'deleting after a failed first apply → destroy (state may exist)',
    input: input({ deleting: true, lastSuccess: {}, records: [record('apply', 'step-failed', -60)] }),
    expected: { kind: 'start', op: 'destroy', reason: 'Deleting' },
  },
  {
    id: 'S3.3',
    name: 'never applied successfully → apply (NoState)',
    input: input({
      lastSuccess: {},
      appliedInputsHash: undefined,
      records: [],
      hasRun: false,
      inputsHash: 'h2',
    }),
    expected: { kind: 'start', op: 'apply', reason: 'NoState' },
  },
  {
    id: 'S3.4',
    name: 'inputs hash differs from the last successful apply → apply (InputsChanged)',
    input: input({
      inputsHash: 'h2',
      records: [record('apply', 'succeeded', -600), record('apply', 'step-failed', -60)],
    }),
    expected: { kind: 'start', op: 'apply', reason: 'InputsChanged' },
  },
  {
    id: 'S3.5',
    name: 'newest apply failed → apply (LastApplyFailed)',
    input: input({
      records: [record('apply', 'succeeded', -600), record('apply', 'step-failed', -60)],
      approvedPlan: { name: 'p', digest: 'd' },
    }),
    expected: { kind: 'start', op: 'apply', reason: 'LastApplyFailed' },
  },
  {
    id: 'S3.5b',
    name: 'newest apply blocked is not a failure (no LastApplyFailed)',
    input: input({
      records: [record('apply', 'succeeded', -600), record('apply', 'awaiting-approval', -60)],
    }),
    expected: { kind: 'idle', reason: 'UpToDate' },
  },
  {
    id: 'S3.6',
    name: 'an approved TerraformPlan waits → apply with that plan (PlanApproved)',
    input: input({
      approvedPlan: { name: 'plan-1', digest: 'sha256:d1' },
      driftDetected: true,
      driftCheck: { enabled: true, action: 'Remediate' },
    }),
    expected: {
      kind: 'start',
      op: 'apply',
      reason: 'PlanApproved',
      plan: { name: 'plan-1', digest: 'sha256:d1' },
    },
  },
  {
    id: 'S3.7',
    name: 'drift found, action Remediate, failures below the limit → apply (DriftRemediation)',
    input: input({
      driftDetected: true,
      driftCheck: { enabled: true, action: 'Remediate' },
      refreshInterval: '1m',
    }),
    expected: { kind: 'start', op: 'apply', reason: 'DriftRemediation' },
  },
  {
    id: 'S3.7b',
    name: 'drift found, action Report → no apply',
    input: input({ driftDetected: true, driftCheck: { enabled: true, action: 'Report' } }),
    expected: { kind: 'idle', reason: 'UpToDate' },
  },
  {
    id: 'S3.8',
    name: 'refresh due → refresh (RefreshDue), before a due drift check',
    input: input({ refreshInterval: '5m', driftCheck: { enabled: true, action: 'Report', interval: '5m' } }),
    expected: { kind: 'start', op: 'refresh', reason: 'RefreshDue' },
  },
  {
    id: 'S3.9',
    name: 'drift check due → drift (DriftDue)',
    input: input({ lastSuccess: { apply: iso(-HOUR) }, records: [record('apply', 'succeeded', -HOUR)] }),
    expected: { kind: 'start', op: 'drift', reason: 'DriftDue' },
  },
  {
    id: 'S3.10',
    name: 'otherwise → wait until the next schedule (UpToDate)',
    input: input(),
    expected: { kind: 'idle', reason: 'UpToDate' },
  },
];

describe('decideOp: DESIGN.md section 3', () => {
  it.each(rows)('$id $name', ({ input: given, expected }) => {
    expect(decideOp(given)).toMatchObject(expected);
  });

  it('S3.10 UpToDate requeues at the next drift check (30m after the apply, jittered)', () => {
    const decision = decideOp(input());
    const dueSeconds = 1800 * (1 + jitterFraction(UID)) - 600;
    expect(decision).toEqual({
      kind: 'idle',
      reason: 'UpToDate',
      requeueAfterSeconds: Math.ceil(dueSeconds),
    });
  });

  it('an approved plan rides along with any apply decision (C19: approving starts the apply of d1)', () => {
    const decision = decideOp(
      input({ inputsHash: 'h2', approvedPlan: { name: 'plan-1', digest: 'sha256:d1' } }),
    );
    expect(decision).toEqual({
      kind: 'start',
      op: 'apply',
      reason: 'InputsChanged',
      plan: { name: 'plan-1', digest: 'sha256:d1' },
    });
  });

  it('drift remediation stops once apply failures reach the failed limit', () => {
    const failures = [1, 2, 3].map((i) => record('apply', 'step-failed', -500 + i));
    const given = input({
      driftDetected: true,
      driftCheck: { enabled: true, action: 'Remediate' },
      records: [...failures, record('apply', 'awaiting-approval', -100)],
    });
    expect(decideOp(given)).toMatchObject({ kind: 'idle' });
  });
});

describe('decideOp: schedules', () => {
  it('the jitter is deterministic per UID, below 10 %, and differs between objects', () => {
    expect(jitterFraction(UID)).toBe(jitterFraction(UID));
    const fractions = ['a', 'b', 'c', 'd', 'e'].map((u) => jitterFraction(`uid-${u}`));
    for (const f of fractions) expect(f).toBeGreaterThanOrEqual(0);
    for (const f of fractions) expect(f).toBeLessThan(MAX_JITTER_FRACTION);
    expect(new Set(fractions).size).toBe(fractions.length);
  });

  it('a drift check is due 30m (jittered) after the newest drift check or apply, not before', () => {
    const base = input({ lastSuccess: { apply: iso(-HOUR), drift: iso(-60) } });
    const due = driftDueMs(base);
    expect(due).toBe(at(-60).getTime() + Math.ceil(1800_000 * (1 + jitterFraction(UID))));
    expect(decideOp({ ...base, now: new Date(due ?? 0) })).toMatchObject({ op: 'drift' });
    expect(decideOp({ ...base, now: new Date((due ?? 0) - 1) })).toMatchObject({ kind: 'idle' });
  });

  it('a cron schedule is due at its next occurrence after the newest check (UTC, no jitter)', () => {
    const given = input({ driftCheck: { enabled: true, action: 'Report', schedule: '0 */6 * * *' } });
    expect(new Date(driftDueMs(given) ?? 0).toISOString()).toBe('2026-11-29T12:00:00.000Z');
    expect(decideOp(given)).toMatchObject({ op: 'drift', reason: 'DriftDue' });
  });

  it('disabled drift checks are never due', () => {
    expect(driftDueMs(input({ driftCheck: { enabled: false, action: 'Report' } }))).toBeUndefined();
  });

  it('a refresh is due after its interval from the newest refresh or apply', () => {
    const given = input({ refreshInterval: '1h', lastSuccess: { apply: iso(-2 * HOUR), refresh: iso(-10) } });
    expect(refreshDueMs(given)).toBe(at(-10).getTime() + Math.ceil(HOUR * 1000 * (1 + jitterFraction(UID))));
  });

  it('a waiting input change pauses drift and refresh (they would report it as drift)', () => {
    const given = input({
      inputsHash: 'h2',
      lastSuccess: { apply: iso(-3 * HOUR) },
      refreshInterval: '1h',
      records: [
        record('apply', 'succeeded', -3 * HOUR),
        record('apply', 'awaiting-approval', -60, { inputsHash: 'h2' }),
      ],
    });
    const decision = decideOp(given);
    expect(decision).toMatchObject({ kind: 'start', op: 'apply', reason: 'InputsChanged' });
    const gates: GateInput = {
      now: T0,
      uid: UID,
      inputsHash: 'h2',
      records: given.records,
      failedJobsHistoryLimit: 3,
      approval: 'pending',
      paused: false,
      dependencies: { ready: true },
      slots: { installationActive: 0, installationLimit: 200, clusterActive: 0, clusterLimit: 20 },
      policyProblems: [],
    };
    expect(decision.kind === 'start' && applyGates(decision, gates)).toMatchObject({
      kind: 'wait',
      reason: 'AwaitingApproval',
      op: 'apply',
    });
  });

  it('pause: an object that needs an apply starts nothing (Paused)', () => {
    const decision = decideOp(input({ inputsHash: 'h2' }));
    const gates: GateInput = {
      now: T0,
      uid: UID,
      inputsHash: 'h2',
      records: [],
      failedJobsHistoryLimit: 3,
      approval: 'none',
      paused: true,
      dependencies: { ready: true },
      slots: { installationActive: 0, installationLimit: 200, clusterActive: 0, clusterLimit: 20 },
      policyProblems: [],
    };
    expect(decision.kind === 'start' && applyGates(decision, gates)).toMatchObject({
      kind: 'wait',
      reason: 'Paused',
    });
  });
});

describe('decideOp: field cases', () => {
  it('C04: spec edited mid-run: nothing new starts until J1 is bookkept; then generation 5 applies', () => {
    const running = record('apply', 'succeeded', 90, { finished: true, bookkept: false, inputsHash: 'h4' });
    const during = input({ inputsHash: 'h5', appliedInputsHash: 'h3', records: [running] });
    expect(decideOp(during)).toMatchObject({ kind: 'watch', job: running.name });
    const after = input({
      inputsHash: 'h5',
      appliedInputsHash: 'h4',
      records: [{ ...running, bookkept: true }],
    });
    expect(decideOp(after)).toMatchObject({ kind: 'start', op: 'apply', reason: 'InputsChanged' });
  });

  it('C02/C05: the same snapshot always gives the same decision', () => {
    const given = input({ inputsHash: 'h2' });
    expect(decideOp(given)).toEqual(decideOp(structuredClone(given)));
  });
});
