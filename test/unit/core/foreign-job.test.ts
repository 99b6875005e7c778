import { describe, expect, it } from 'vitest';
import { LABELS } from '../../../src/core/job-labels.ts';
import { freeJobName, jobName } from '../../../src/core/names.ts';
import { nameHolderOf } from '../../../src/core/own-jobs.ts';
import { heldOutcome } from '../../../src/core/planner/start.ts';
import { planStep } from '../../../src/core/planner.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import type { PlanFacts, PlannedStart } from '../../../src/core/step-plan.ts';
import type { JobView } from '../../../src/core/views.ts';
import type { TargetSpec } from '../../../src/schemas/kinds/target.ts';
import { iso, T0 } from './builders.ts';

// Issue 23 item 1 (DESIGN.md section 5 step 8): a finished Job that is not this object's holds no object.

const NAME = { kind: 'TerraformMachine', name: 'm-a', op: 'apply', inputsHash: 'h1', tick: '' } as const;
const nameAt = (attempt: number) => jobName({ ...NAME, attempt });

/** A Job under `nameAt(1)`: labels and owner reference of `uid`, finished or running. */
function heldBy(
  uid: string,
  state: 'finished' | 'running',
  extra: Partial<JobView['metadata']> = {},
): JobView {
  return {
    metadata: {
      name: nameAt(1),
      labels: { [LABELS.ownerUid]: uid, [LABELS.op]: 'apply', [LABELS.attempt]: '1' },
      ownerReferences: [{ kind: 'TerraformMachine', name: 'm-a', uid }],
      creationTimestamp: iso(0),
      ...extra,
    },
    status:
      state === 'finished'
        ? { conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: iso(60) }], succeeded: 1 }
        : { active: 1 },
  };
}

describe('nameHolderOf: who holds the name of the next Job', () => {
  const wanted = { uid: 'uid-new', op: 'apply', attempt: 1 } as const;
  const rows: { id: string; name: string; job: JobView; expected: ReturnType<typeof nameHolderOf> }[] = [
    {
      id: 'H1',
      name: "this object's Job of the run, running: ours to adopt (C02)",
      job: heldBy('uid-new', 'running'),
      expected: 'ours',
    },
    {
      id: 'H2',
      name: "this object's Job of the run, finished: still ours (a crashed step's Job that ran fast)",
      job: heldBy('uid-new', 'finished'),
      expected: 'ours',
    },
    {
      id: 'H3',
      name: "a predecessor's Job (old UID) that runs: waited for",
      job: heldBy('uid-old', 'running'),
      expected: 'foreign-running',
    },
    {
      id: 'H4',
      name: "a predecessor's Job (old UID) that finished: passed over",
      job: heldBy('uid-old', 'finished'),
      expected: 'foreign-finished',
    },
    {
      id: 'H5',
      name: 'a Failed condition is finished too',
      job: {
        ...heldBy('uid-old', 'running'),
        status: { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }] },
      },
      expected: 'foreign-finished',
    },
    {
      id: 'H6',
      name: 'counts without a condition are not finished (the Job controller has not said so yet)',
      job: { ...heldBy('uid-old', 'running'), status: { succeeded: 1 } },
      expected: 'foreign-running',
    },
    {
      id: 'H7',
      name: 'our UID in the label without our owner reference (orphaned by hand) is not ours',
      job: heldBy('uid-new', 'finished', { ownerReferences: [] }),
      expected: 'foreign-finished',
    },
    {
      id: 'H8',
      name: 'our running Job being deleted is not adopted: waited for until it is gone',
      job: heldBy('uid-new', 'running', { deletionTimestamp: iso(30) }),
      expected: 'foreign-running',
    },
  ];
  it.each(rows)('$id $name', ({ job, expected }) => {
    expect(nameHolderOf(job, wanted)).toBe(expected);
  });
});

describe('freeJobName: the first name no finished foreign Job holds', () => {
  it('F1 nothing taken: the attempt it starts from, nothing skipped (the normal path)', () => {
    expect(freeJobName(NAME, 1, new Set())).toEqual({ attempt: 1, name: nameAt(1), skipped: [] });
  });
  it('F2 the first name taken: attempt 2, and attempt 1 named as skipped', () => {
    expect(freeJobName(NAME, 1, new Set([nameAt(1)]))).toEqual({
      attempt: 2,
      name: nameAt(2),
      skipped: [nameAt(1)],
    });
  });
  it('F3 consecutive names taken are all passed over, in attempt order', () => {
    const taken = new Set([nameAt(3), nameAt(4)]);
    expect(freeJobName(NAME, 3, taken)).toEqual({
      attempt: 5,
      name: nameAt(5),
      skipped: [nameAt(3), nameAt(4)],
    });
  });
  it('F4 a taken name not on the way (another op, inputs or attempt) changes nothing', () => {
    const taken = new Set([jobName({ ...NAME, attempt: 1, op: 'drift' }), nameAt(7)]);
    expect(freeJobName(NAME, 1, taken)).toEqual({ attempt: 1, name: nameAt(1), skipped: [] });
  });
});

describe('planStep: the start past a taken name', () => {
  const spec = {
    source: { image: 'registry.example.com/m:1' },
    backend: { type: 'kubernetes' },
  } as TargetSpec;
  const snap: Snapshot = {
    ref: { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' },
    uid: 'uid-new',
    generation: 1,
    resourceVersion: '7',
    meta: { finalizers: [FINALIZER] },
    spec,
    status: {},
    paused: false,
    jobs: [],
    records: [],
    referencedSecrets: new Map(),
    variablesSecretOptIns: new Map(),
    inputsHash: 'h1',
  };
  const facts: PlanFacts = {
    snap,
    now: T0,
    config: { runnerImage: 'runner:1', maxActiveJobs: 200, clusterMaxActiveJobs: 20 },
    pods: [],
    slots: { installation: 0, cluster: undefined },
  };
  function startOf(planFacts: PlanFacts): PlannedStart {
    const plan = planStep(planFacts);
    if (plan.kind !== 'plan' || plan.move.kind !== 'start') throw new Error(`no start: ${plan.kind}`);
    return plan.move.start;
  }

  it('S1 a new object starts attempt 1 under the deterministic name, skipping nothing', () => {
    const start = startOf(facts);
    expect(start).toMatchObject({ attempt: 1, name: nameAt(1), skipped: [] });
  });

  it('S2 with attempt 1 taken by a finished foreign Job: attempt 2, and the Event and status say why', () => {
    const start = startOf({ ...facts, takenJobNames: [nameAt(1)] });
    expect(start).toMatchObject({ attempt: 2, name: nameAt(2), skipped: [nameAt(1)] });
    expect(start.manifest.metadata.name).toBe(nameAt(2));
    expect(start.guard.job).toBe(nameAt(2));
    expect(start.status.activeJob).toMatchObject({ name: nameAt(2), attempt: 2 });
    expect(start.status.attempts?.apply?.last).toBe(2);
    expect(start.createdEvent.note).toContain(`skipped ${nameAt(1)}`);
    const condition = start.status.conditions?.find((c) => c.type === 'ApplyJobSucceeded');
    expect(condition?.message).toContain(`skipped ${nameAt(1)}`);
  });

  it('S3 a wait after the skip keeps the skipped attempt as used, so the next step starts past it', () => {
    const start = startOf({ ...facts, takenJobNames: [nameAt(1)] });
    const held = heldOutcome(
      start,
      { reason: 'WaitingForForeignJob', message: `a Job named ${nameAt(2)} runs` },
      snap,
    );
    expect(held.status?.waitReason).toBe('WaitingForForeignJob');
    expect(held.status?.attempts?.apply?.last).toBe(1);
    expect(held.status?.activeJob).toBeUndefined();
    const next = startOf({ ...facts, snap: { ...snap, status: held.status ?? {} } });
    expect(next).toMatchObject({ attempt: 2, name: nameAt(2), skipped: [] });
  });

  it('S4 a wait with nothing skipped records no attempt (the running foreign Job is waited for)', () => {
    const held = heldOutcome(startOf(facts), { reason: 'WaitingForForeignJob', message: 'runs' }, snap);
    expect(held.status?.attempts).toBeUndefined();
  });
});
