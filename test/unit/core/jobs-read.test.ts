import { describe, expect, it } from 'vitest';
import { BLOCK_MOVE_ANNOTATION } from '../../../src/core/block-move.ts';
import { type JobsEvidence, jobsListSkippable } from '../../../src/core/jobs-read.ts';
import { clusterOperationMessage } from '../../../src/core/planner/cluster-operation.ts';
import { heldOutcome } from '../../../src/core/planner/start.ts';
import { planStep } from '../../../src/core/planner.ts';
import { FINALIZER, MANAGED_BY_ANNOTATION } from '../../../src/core/preamble.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import type { PlanFacts } from '../../../src/core/step-plan.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';
import { iso, M_A, planFacts, snapshot, T0 } from './builders.ts';

// Issue 22: a step about an object at rest plans from the object alone; any decision but idle lists the
// Jobs first, so nothing starts, waits or is bookkept from an unlisted snapshot.

const attempts = { apply: { last: 1, recorded: 1, failures: 0, interruptions: 0, lockContentions: 0 } };
const atRest: TargetStatus = {
  attempts,
  stateSuffix: 'm-m-a',
  lastSuccess: { apply: iso(-60), drift: iso(-60) },
  appliedInputsHash: 'h1',
  lastRun: { op: 'apply', result: 'succeeded' } as never,
};
const ours = { finalizers: [FINALIZER] };
const evidence: JobsEvidence = { meta: ours, status: atRest };

describe('jobsListSkippable', () => {
  it('JR1 an object that shows nothing runs, its retries and state suffix recorded, is planned unlisted', () => {
    expect(jobsListSkippable(evidence)).toBe(true);
    expect(jobsListSkippable({ meta: { ...ours, annotations: { other: '' } }, status: atRest })).toBe(true);
  });

  const listed: [string, JobsEvidence][] = [
    [
      'the block-move annotation (a Job may run)',
      { ...evidence, meta: { ...ours, annotations: { [BLOCK_MOVE_ANNOTATION]: '' } } },
    ],
    [
      'status.activeJob',
      {
        ...evidence,
        status: { ...atRest, activeJob: { name: 'j', op: 'apply', attempt: 2, startedAt: iso(0) } },
      },
    ],
    [
      'a deletion (the finalize reads the Jobs)',
      { ...evidence, meta: { ...ours, deletionTimestamp: iso(0) } },
    ],
    ['a status that does not parse', { ...evidence, statusUnreadable: ['status.lastRun'] }],
    [
      'no stored retry state (it would come from the records), and no wait recorded',
      { ...evidence, status: { ...atRest, attempts: undefined } },
    ],
    [
      'no recorded state suffix (a Job would name it), and no wait recorded',
      { ...evidence, status: { ...atRest, stateSuffix: undefined } },
    ],
    [
      'a recorded wait while a Job runs',
      {
        ...evidence,
        status: {
          waitReason: 'Paused',
          activeJob: { name: 'j', op: 'apply', attempt: 2, startedAt: iso(0) },
        },
      },
    ],
  ];
  it.each(listed)('JR2 %s: the Jobs are listed', (_name, object) => {
    expect(jobsListSkippable(object)).toBe(false);
  });

  it('JR7 an object that never ran and records a wait is planned unlisted (its retries and suffix absent)', () => {
    expect(jobsListSkippable({ meta: ours, status: { waitReason: 'WaitingForDependencies' } })).toBe(true);
  });

  // The preamble (an object without our finalizer) decides nothing from the Jobs; its runner setup names
  // the state suffix, which a Job could carry only when the status shows runs and records none.
  const preambleSteps: [string, JobsEvidence, boolean][] = [
    ["a new object's first step (an empty status)", { meta: {}, status: {} }, true],
    ['our finalizer removed by hand, the suffix recorded', { meta: {}, status: atRest }, true],
    [
      'externally managed, a Job running',
      {
        meta: { ...ours, annotations: { [MANAGED_BY_ANNOTATION]: 'x', [BLOCK_MOVE_ANNOTATION]: '' } },
        status: atRest,
      },
      true,
    ],
    ['deleting without our finalizer', { meta: { deletionTimestamp: iso(0) }, status: atRest }, true],
    [
      'runs on record, no suffix recorded (a Job would name it)',
      { meta: {}, status: { ...atRest, stateSuffix: undefined } },
      false,
    ],
    [
      'a status that does not parse (its suffix may be among what failed)',
      { meta: {}, status: {}, statusUnreadable: ['status.stateSuffix'] },
      false,
    ],
  ];
  it.each(preambleSteps)('JR16 the preamble: %s, unlisted: %s', (_name, object, unlisted) => {
    expect(jobsListSkippable(object)).toBe(unlisted);
  });
});

describe('planning from an unlisted snapshot', () => {
  const slotsFree = { installation: 0, cluster: undefined };
  const snap = (over: Partial<Snapshot> = {}): Snapshot =>
    snapshot({ ...M_A, status: atRest, jobsUnread: true, ...over });
  const facts = (s: Snapshot) => ({
    snap: s,
    now: T0,
    config: { runnerImage: 'runner:test', maxActiveJobs: 200, clusterMaxActiveJobs: 20 },
  });

  it('JR3 idle: planned without the Jobs, and nothing else is read', () => {
    const planned = planStep(facts(snap()));
    expect(planned).toMatchObject({ kind: 'plan', move: { kind: 'rest' }, outcome: { reason: 'UpToDate' } });
  });

  it('JR4 a start (the inputs changed) asks for the Jobs once its gates pass (the slots read from Redis first)', () => {
    const changed = snap({ inputsHash: 'h2' });
    expect(planStep(facts(changed))).toEqual({ kind: 'read', read: 'slots' });
    expect(planStep({ ...facts(changed), slots: { installation: 0, cluster: undefined } })).toEqual({
      kind: 'read',
      read: 'jobs',
    });
  });

  it('JR5 a spec that does not parse asks for the Jobs first (its wait prunes and reads records)', () => {
    expect(planStep(facts(snap({ spec: undefined, specProblem: 'bad' })))).toEqual({
      kind: 'read',
      read: 'jobs',
    });
  });

  it("JR17 a new object's first step: the finalizer and the runner setup, planned as from its listed (empty) Jobs", () => {
    const fresh = snap({ meta: {}, status: {} });
    const { jobsUnread: _unread, ...listed } = fresh;
    const unlisted = planStep(facts(fresh));
    expect(unlisted).toMatchObject({
      kind: 'plan',
      move: { kind: 'finalizers', finalizers: [FINALIZER], setup: { stateSuffix: 'm-m-a' } },
      outcome: { reason: 'FinalizerAdded' },
    });
    expect(planStep(facts(listed))).toEqual(unlisted);
  });

  it('JR6 the same snapshot listed plans the same idle rest', () => {
    const { jobsUnread: _unread, ...listed } = snap();
    const unlisted = planStep(facts(snap()));
    const read = planStep(facts(listed));
    if (unlisted.kind !== 'plan' || read.kind !== 'plan') throw new Error('expected plans');
    expect(read).toEqual(unlisted);
  });

  // A machine that never ran, waiting: the wait the status records is found again without the Jobs.
  const waiting = (waitReason: TargetStatus['waitReason'], over: Partial<Snapshot> = {}): Snapshot => {
    const first = planStep(planFacts(snapshot({ ...M_A, ...over })));
    if (first.kind !== 'plan' || first.status === undefined) throw new Error('expected a wait written');
    expect(first.status.waitReason).toBe(waitReason);
    return snapshot({ ...M_A, ...over, status: first.status, jobsUnread: true });
  };

  it('JR8 the recorded wait found again (pause) is kept: no Job list, nothing written', () => {
    const planned = planStep(facts(waiting('Paused', { paused: true })));
    expect(planned).toMatchObject({
      kind: 'plan',
      status: undefined,
      move: { kind: 'rest' },
      outcome: { action: 'waiting', reason: 'Paused' },
    });
  });

  it('JR9 a Secret still missing keeps its wait unlisted (no pods read for an object that never ran)', () => {
    const spec = TARGET_SCHEMAS.TerraformMachine.spec.parse({
      source: { image: 'registry.example.com/m:1' },
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 'not-yet', key: 'token' } }],
    });
    const over = { spec, referencedSecrets: new Map([['not-yet', undefined]]) };
    const planned = planStep({ ...facts(waiting('WaitingForDependencies', over)), slots: slotsFree });
    expect(planned).toMatchObject({
      kind: 'plan',
      status: undefined,
      outcome: { reason: 'WaitingForDependencies' },
    });
  });

  it('JR10 a wait that changed (the pause lifted into another wait) is planned again from the listed Jobs', () => {
    const paused = waiting('Paused', { paused: true });
    const planned = planStep({
      ...facts({ ...paused, paused: false, status: { ...paused.status } }),
      slots: { installation: 200, cluster: undefined },
    });
    expect(planned).toEqual({ kind: 'read', read: 'jobs' });
  });

  it('JR11 a wait whose cause went (the pause lifted, a start) lists the Jobs before anything starts', () => {
    const paused = waiting('Paused', { paused: true });
    expect(planStep({ ...facts({ ...paused, paused: false }), slots: slotsFree })).toEqual({
      kind: 'read',
      read: 'jobs',
    });
  });

  it('JR12 an idle decision for an object whose retries are not stored lists the Jobs', () => {
    const idle = snap({ status: { ...atRest, attempts: undefined, waitReason: 'Paused' } });
    expect(planStep(facts(idle))).toEqual({ kind: 'read', read: 'jobs' });
  });

  // A member of cluster c1 whose start met the cluster's apply (its lease), as the step writes that wait.
  const holder = 'captf-c-c1-apply-a1-aaaaaa';
  const member = (status: TargetStatus = {}): Snapshot => {
    const over: Partial<Snapshot> = {
      ...M_A,
      clusterName: 'c1',
      owningCluster: { name: 'c1', ready: true },
      status,
    };
    const first = planStep({
      ...planFacts(snapshot(over)),
      slots: slotsFree,
      pods: [],
      state: 'resources',
    });
    if (first.kind !== 'plan' || first.move.kind !== 'start') throw new Error('expected a start');
    const held = heldOutcome(
      first.move.start,
      { reason: 'WaitingForClusterOperation', message: clusterOperationMessage(holder) },
      snapshot(over),
    );
    expect(held.status?.waitReason).toBe('WaitingForClusterOperation');
    heldAtTake = held.outcome;
    return snapshot({ ...over, status: held.status, jobsUnread: true });
  };
  let heldAtTake: StepOutcome | undefined;

  it("JR13 a member's cluster operation wait found again while the lease is held: the lease is read (Redis), and the wait kept, no Job list, nothing written", () => {
    const unlisted = { ...facts(member()), slots: slotsFree };
    expect(planStep(unlisted)).toEqual({ kind: 'read', read: 'cluster-lease' });
    const planned = planStep({ ...unlisted, clusterLease: { clusterHolder: holder, runLeaseHeld: false } });
    expect(planned).toMatchObject({
      kind: 'plan',
      status: undefined,
      move: { kind: 'rest' },
      outcome: {
        action: 'waiting',
        reason: 'WaitingForClusterOperation',
        waitsFor: [{ kind: 'RunLeases', namespace: 'team-a', name: 'c1' }],
      },
    });
    // The outcome the take answered when it wrote the wait: the same requeue, message and wakes.
    if (planned.kind !== 'plan') throw new Error('expected a plan');
    const { reason, requeueAfterSeconds, message, waitsFor } = planned.outcome;
    expect({ reason, requeueAfterSeconds, message, waitsFor }).toEqual({
      reason: heldAtTake?.reason,
      requeueAfterSeconds: heldAtTake?.requeueAfterSeconds,
      message: heldAtTake?.message,
      waitsFor: heldAtTake?.waitsFor,
    });
    // Its run lease was just read free: nothing to heal.
    expect(planned.move).toEqual({ kind: 'rest', healLease: false });
  });

  it('JR13b a member that ran before (its update met the cluster apply): kept the same, its pods unread', () => {
    const ranBefore = member({ ...atRest, appliedInputsHash: 'h0' });
    const unlisted = { ...facts(ranBefore), slots: slotsFree };
    // Provisioned: a listed start would read its state Secret first; the wait found again reads neither it
    // nor the pods.
    expect(planStep(unlisted)).toEqual({ kind: 'read', read: 'cluster-lease' });
    expect(
      planStep({ ...unlisted, clusterLease: { clusterHolder: holder, runLeaseHeld: false } }),
    ).toMatchObject({
      kind: 'plan',
      status: undefined,
      outcome: { action: 'waiting', reason: 'WaitingForClusterOperation' },
    });
  });

  const listedAgain: [string, PlanFacts['clusterLease']][] = [
    ['the cluster lease released (the wake lost)', { clusterHolder: undefined, runLeaseHeld: false }],
    [
      'held by a later operation of the cluster (the message changes)',
      { clusterHolder: 'captf-c-c1-apply-a2-bbbbbb', runLeaseHeld: false },
    ],
    ["the member's own run lease held", { clusterHolder: holder, runLeaseHeld: true }],
    ['Redis not answering', 'unknown'],
  ];
  it.each(listedAgain)('JR14 %s: planned again from the listed Jobs', (_name, clusterLease) => {
    expect(planStep({ ...facts(member()), slots: slotsFree, clusterLease })).toEqual({
      kind: 'read',
      read: 'jobs',
    });
  });

  it('JR14b a provisioned member whose input went meanwhile (a variables Secret deleted): written from the listed Jobs, not kept', () => {
    const spec = TARGET_SCHEMAS.TerraformMachine.spec.parse({
      source: { image: 'registry.example.com/m:1' },
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 'token', key: 'token' } }],
    });
    // Provisioned: the unlisted start stops at its state Secret's read, before it resolves its inputs.
    const waiting = member({ ...atRest, appliedInputsHash: 'h0' });
    const there = new Map([['token', { token: 'x' }]]);
    const optedIn = new Map([['token', true]]);
    const lease = { clusterHolder: holder, runLeaseHeld: false };
    const withSecret = { ...waiting, spec, referencedSecrets: there, variablesSecretOptIns: optedIn };
    expect(planStep({ ...facts(withSecret), slots: slotsFree, clusterLease: lease })).toMatchObject({
      kind: 'plan',
      status: undefined,
      outcome: { reason: 'WaitingForClusterOperation' },
    });
    const gone = { ...withSecret, referencedSecrets: new Map([['token', undefined]]) };
    expect(planStep({ ...facts(gone), slots: slotsFree, clusterLease: lease })).toEqual({
      kind: 'read',
      read: 'jobs',
    });
  });

  it('JR15 a gate that now holds the member (its pause) is written from the listed Jobs, the lease unread', () => {
    const paused = { ...member(), paused: true };
    expect(planStep({ ...facts(paused), slots: slotsFree })).toEqual({ kind: 'read', read: 'jobs' });
  });
});
