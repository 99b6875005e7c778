import { describe, expect, it } from 'vitest';
import type { StartDecision } from '../../../src/core/decide.ts';
import { applyGates, type GateInput } from '../../../src/core/gates.ts';
import { jitterFraction } from '../../../src/core/jitter.ts';
import { hasJobSlot } from '../../../src/core/slot-shares.ts';
import { EVENT_SAFETY_SECONDS, WAIT_TABLE, waitFor } from '../../../src/core/wait-table.ts';
import { WAIT_REASONS } from '../../../src/schemas/kinds/wait-reason.ts';
import { at, record, T0 } from './builders.ts';

const UID = '6f1c2a8e-0000-4000-8000-000000000001';
const applyStart: StartDecision = { kind: 'start', op: 'apply', reason: 'NoState' };
const driftStart: StartDecision = { kind: 'start', op: 'drift', reason: 'DriftDue' };

function gateInput(overrides: Partial<GateInput> = {}): GateInput {
  return {
    now: T0,
    uid: UID,
    inputsHash: 'h1',
    records: [],
    failedJobsHistoryLimit: 3,
    approval: 'none',
    paused: false,
    dependencies: { ready: true },
    slots: { installationActive: 0, installationLimit: 200, clusterActive: 0, clusterLimit: 20 },
    policyProblems: [],
    ...overrides,
  };
}

/** DESIGN.md section 6: each wait with its requeue. */
const waitRows = [
  { id: 'S6.1', name: 'a contended state lock: 30 s', reasons: ['LockContended'], seconds: 30 },
  { id: 'S6.3', name: 'Job running: 300 s fallback', reasons: ['JobActive'], seconds: 300 },
  { id: 'S6.4', name: 'cache lag: 5 s', reasons: ['WaitingForCache'], seconds: 5 },
  {
    id: 'S6.4b',
    name: 'a terminating pod of an earlier attempt: 30 s (a reference-mode source cannot map a gone pod)',
    reasons: ['WaitingForPreviousAttempt'],
    seconds: 30,
  },
  { id: 'S6.5', name: 'approval: at most 10 min', reasons: ['AwaitingApproval'], seconds: 600 },
  { id: 'S6.6', name: 'JobPolicyInvalid: 10 min', reasons: ['JobPolicyInvalid'], seconds: 600 },
] as const;

describe('WAIT_TABLE: DESIGN.md section 6', () => {
  it.each(waitRows)('$id $name', ({ reasons, seconds }) => {
    for (const reason of reasons) {
      expect(waitFor(reason, { now: T0, uid: UID, message: 'm' }).requeueAfterSeconds).toBe(seconds);
    }
  });

  it.each([
    'WaitingForClusterOperation',
    'WaitingForMachineOperations',
    'WaitingForRunLease',
    'WaitingForJobSlot',
    'WaitingForDependencies',
    'WaitingForOwner',
    'WaitingForClusterInfrastructure',
    'WaitingForBootstrapData',
    'VariablesSecretNotOptedIn',
  ] as const)(
    'S6.7 %s, woken by an event or a release: a safety requeue of 10 min plus the object jitter',
    (reason) => {
      const wait = waitFor(reason, { now: T0, uid: UID, message: 'm' });
      expect(wait.requeueAfterSeconds).toBe(Math.ceil(EVENT_SAFETY_SECONDS * (1 + jitterFraction(UID))));
      expect(wait.requeueAfterSeconds).toBeGreaterThanOrEqual(600);
      expect(wait.requeueAfterSeconds).toBeLessThanOrEqual(660);
    },
  );

  it('S6.8 backoff waits until nextAttemptAt', () => {
    const wait = waitFor('Backoff', { now: T0, uid: UID, message: 'm', untilMs: at(90).getTime() });
    expect([wait.requeueAfterSeconds, wait.nextAttemptAt]).toEqual([90, at(90)]);
  });

  it('every wait reason has a requeue of at most 10 minutes', () => {
    for (const reason of WAIT_REASONS) expect(WAIT_TABLE[reason].requeueSeconds).toBeLessThanOrEqual(600);
  });
});

describe('applyGates: DESIGN.md section 5 step 5, in order', () => {
  it('G1 no gate holds → the start goes through unchanged', () => {
    expect(applyGates(applyStart, gateInput())).toBe(applyStart);
  });

  it('G2 backoff holds an apply until the delay has passed', () => {
    const records = [record('apply', 'step-failed', -30)];
    expect(applyGates(applyStart, gateInput({ records }))).toMatchObject({
      kind: 'wait',
      reason: 'Backoff',
      requeueAfterSeconds: 30,
    });
    expect(applyGates(applyStart, gateInput({ records, now: at(31) }))).toBe(applyStart);
  });

  it('G3 an input change is not a retry: no backoff for new inputs, but the count carries on', () => {
    const records = [
      record('apply', 'step-failed', -200, { inputsHash: 'h0' }),
      record('apply', 'step-failed', -10, { inputsHash: 'h0' }),
    ];
    expect(applyGates(applyStart, gateInput({ records, inputsHash: 'h1' }))).toBe(applyStart);
    const failedAgain = [...records, record('apply', 'step-failed', 0, { inputsHash: 'h1' })];
    expect(applyGates(applyStart, gateInput({ records: failedAgain, inputsHash: 'h1' }))).toMatchObject({
      reason: 'Backoff',
      requeueAfterSeconds: 600,
    });
  });

  it('G3b a destroy whose inputs changed skips its backoff too; a drift check never does', () => {
    const destroyStart: StartDecision = { kind: 'start', op: 'destroy', reason: 'Deleting' };
    const destroys = [
      record('destroy', 'step-failed', -200, { inputsHash: 'h0' }),
      record('destroy', 'step-failed', -10, { inputsHash: 'h0' }),
    ];
    expect(applyGates(destroyStart, gateInput({ records: destroys, inputsHash: 'h0' }))).toMatchObject({
      reason: 'Backoff',
    });
    expect(applyGates(destroyStart, gateInput({ records: destroys, inputsHash: 'h1' }))).toBe(destroyStart);
    // An apply's new inputs do not lift the destroy's backoff: only the destroy's own newest run counts.
    const mixed = [...destroys, record('apply', 'step-failed', -300, { inputsHash: 'h1' })];
    expect(applyGates(destroyStart, gateInput({ records: mixed, inputsHash: 'h0' }))).toMatchObject({
      reason: 'Backoff',
    });
    const drifts = [record('drift', 'step-failed', -10, { inputsHash: 'h0' })];
    expect(applyGates(driftStart, gateInput({ records: drifts, inputsHash: 'h1' }))).toMatchObject({
      reason: 'Backoff',
    });
  });

  it('G2b a lock held by a live holder waits 30 s from that run, uncounted', () => {
    const records = [record('apply', 'lock-contended', -10)];
    expect(applyGates(applyStart, gateInput({ records }))).toMatchObject({
      reason: 'LockContended',
      requeueAfterSeconds: 20,
    });
    expect(applyGates(applyStart, gateInput({ records, now: at(20) }))).toBe(applyStart);
  });

  it('G4 a pending plan holds an apply (AwaitingApproval), not a drift check', () => {
    expect(applyGates(applyStart, gateInput({ approval: 'pending' }))).toMatchObject({
      reason: 'AwaitingApproval',
      requeueAfterSeconds: 600,
    });
    expect(applyGates(driftStart, gateInput({ approval: 'pending' }))).toBe(driftStart);
  });

  it('G5 Cluster API pause holds every start', () => {
    expect(applyGates(driftStart, gateInput({ paused: true }))).toMatchObject({ reason: 'Paused' });
  });

  it('G6 dependencies hold a start with their message', () => {
    const wait = applyGates(
      applyStart,
      gateInput({ dependencies: { ready: false, message: 'cluster demo not provisioned' } }),
    );
    expect(wait).toMatchObject({
      reason: 'WaitingForDependencies',
      message: 'cluster demo not provisioned',
      requeueAfterSeconds: Math.ceil(EVENT_SAFETY_SECONDS * (1 + jitterFraction(UID))),
    });
  });

  it('G7 Job slots: 200 per installation, 20 per cluster', () => {
    const full = { installationActive: 200, installationLimit: 200, clusterActive: 0, clusterLimit: 20 };
    expect(applyGates(applyStart, gateInput({ slots: full }))).toMatchObject({ reason: 'WaitingForJobSlot' });
    const clusterFull = {
      installationActive: 0,
      installationLimit: 200,
      clusterActive: 20,
      clusterLimit: 20,
    };
    expect(applyGates(applyStart, gateInput({ slots: clusterFull }))).toMatchObject({
      reason: 'WaitingForJobSlot',
    });
  });

  it('G8 lock timeout not below the deadline → JobPolicyInvalid, 10 min, with the rule message', () => {
    const wait = applyGates(
      applyStart,
      gateInput({ policyProblems: ['lockTimeoutSeconds (600) must be below activeDeadlineSeconds (600)'] }),
    );
    expect(wait).toMatchObject({
      reason: 'JobPolicyInvalid',
      requeueAfterSeconds: 600,
      message: expect.stringContaining('lockTimeoutSeconds'),
    });
  });

  it('G9 the first holding gate wins: backoff before approval before pause', () => {
    const records = [record('apply', 'step-failed', -10)];
    expect(applyGates(applyStart, gateInput({ records, approval: 'pending', paused: true }))).toMatchObject({
      reason: 'Backoff',
    });
    expect(applyGates(applyStart, gateInput({ approval: 'pending', paused: true }))).toMatchObject({
      reason: 'AwaitingApproval',
    });
  });
});

describe('hasJobSlot: the 80 % rule', () => {
  it.each([
    {
      id: 'S5.slot-1',
      name: 'apply at 199/200 starts',
      op: 'apply',
      active: 199,
      cluster: 0,
      expected: true,
    },
    {
      id: 'S5.slot-2',
      name: 'drift at 159/200 starts',
      op: 'drift',
      active: 159,
      cluster: 0,
      expected: true,
    },
    {
      id: 'S5.slot-3',
      name: 'drift at 160/200 (80 %) waits',
      op: 'drift',
      active: 160,
      cluster: 0,
      expected: false,
    },
    {
      id: 'S5.slot-4',
      name: 'refresh at 16/20 in the cluster waits',
      op: 'refresh',
      active: 0,
      cluster: 16,
      expected: false,
    },
    {
      id: 'S5.slot-5',
      name: 'destroy at 19/20 in the cluster starts',
      op: 'destroy',
      active: 0,
      cluster: 19,
      expected: true,
    },
  ] as const)('$id $name', ({ op, active, cluster, expected }) => {
    expect(
      hasJobSlot(op, {
        installationActive: active,
        installationLimit: 200,
        clusterActive: cluster,
        clusterLimit: 20,
      }),
    ).toBe(expected);
  });
});
