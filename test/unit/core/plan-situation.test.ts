import { describe, expect, it } from 'vitest';
import { type PlanFacts, plansAfterBookkeeping } from '../../../src/core/plan-situation.ts';
import type { PlanChange } from '../../../src/core/record-run.ts';
import { API_VERSION } from '../../../src/schemas/kinds/api-group.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';
import type { PlanPhase, TerraformPlan } from '../../../src/schemas/kinds/terraform-plan.ts';

// The plan situation a step decides on (DESIGN.md section 11, C19): after the step's own bookkeeping.

const UID = 'uid-1';
const D1 = `sha256:${'d'.repeat(64)}`;
const D2 = `sha256:${'e'.repeat(64)}`;

function plan(approved: boolean, phase: PlanPhase = 'Pending', digest = D1): TerraformPlan {
  return {
    apiVersion: API_VERSION,
    kind: 'TerraformPlan',
    metadata: { name: 'j1-plan', resourceVersion: '7', creationTimestamp: '2026-11-29T12:00:00Z' },
    spec: {
      targetRef: { kind: 'TerraformMachine', name: 'web', uid: UID },
      inputsHash: 'h1',
      digest,
      add: 0,
      change: 1,
      destroy: 0,
      destructive: false,
      job: 'j1',
      approved,
      ...(approved ? { approvedBy: 'alice' } : {}),
    },
    status: { phase },
  };
}

function appliedRun(digest: string): TargetStatus {
  return {
    lastRun: {
      job: 'j2',
      op: 'apply',
      attempt: 2,
      generation: 1,
      inputsHash: 'h1',
      startedAt: '2026-11-29T12:05:00Z',
      finishedAt: '2026-11-29T12:06:00Z',
      result: 'succeeded',
      reason: 'ApplySucceeded',
      plan: { digest, add: 0, change: 1, destroy: 0 },
    },
  };
}

function facts(overrides: Partial<PlanFacts>): PlanFacts {
  return { uid: UID, inputsHash: 'h1', changes: [], status: {}, ...overrides };
}

function moved(pending: TerraformPlan, phase: 'Applied' | 'Superseded' = 'Applied'): PlanChange {
  return { kind: 'phase', plan: pending, phase, job: 'j2', message: `${phase} by j2` };
}

describe('plans after bookkeeping (C19)', () => {
  const rows = [
    {
      id: 'PS1',
      name: 'an approved plan nobody applied yet starts its apply',
      input: facts({ pendingPlan: plan(true) }),
      approval: 'approved',
    },
    {
      id: 'PS2',
      name: 'C19: an approved plan this step bookkeeps as Applied is spent: no second apply',
      input: facts({
        pendingPlan: plan(true),
        changes: [moved(plan(true))],
        status: appliedRun(D1),
      }),
      approval: 'none',
    },
    {
      id: 'PS3',
      name: 'an approved plan this step bookkeeps as Superseded is spent',
      input: facts({
        pendingPlan: plan(true),
        changes: [moved(plan(true), 'Superseded')],
      }),
      approval: 'none',
    },
    {
      id: 'PS4',
      name: 'C19: an approved plan whose digest the newest bookkept apply applied never starts another apply (its phase write lost a race)',
      input: facts({ pendingPlan: plan(true, 'Approved'), status: appliedRun(D1) }),
      approval: 'none',
    },
    {
      id: 'PS5',
      name: 'an apply of another digest does not spend the approved plan',
      input: facts({ pendingPlan: plan(true), status: appliedRun(D2) }),
      approval: 'approved',
    },
    {
      id: 'PS6',
      name: 'a plan that waits for approval holds the apply',
      input: facts({ pendingPlan: plan(false) }),
      approval: 'pending',
    },
    {
      id: 'PS7',
      name: 'a plan this step creates for the current inputs waits for approval like a live one',
      input: facts({
        changes: [
          {
            kind: 'create',
            job: 'j3',
            generation: 1,
            inputsHash: 'h1',
            plan: { digest: D2, add: 0, change: 0, destroy: 1, destructive: true },
          },
        ],
      }),
      approval: 'pending',
    },
    {
      id: 'PS8',
      name: 'an already Applied plan is not live',
      input: facts({ pendingPlan: plan(true, 'Applied') }),
      approval: 'none',
    },
  ];
  it.each(rows)('$id $name', ({ input, approval }) => {
    expect(plansAfterBookkeeping(input).approval).toBe(approval);
  });

  it('PS9 a pending plan for other inputs is superseded, one this step already moved is not written twice', () => {
    const old = plan(true);
    expect(plansAfterBookkeeping(facts({ pendingPlan: old, inputsHash: 'h2' })).supersede).toEqual([
      'j1-plan',
    ]);
    expect(
      plansAfterBookkeeping(facts({ pendingPlan: old, inputsHash: 'h2', changes: [moved(old)] })).supersede,
    ).toEqual([]);
  });

  it('PS11 a plan replaced by one this step creates is superseded once: by the bookkeeping when it says so', () => {
    const created: PlanChange = {
      kind: 'create',
      generation: 1,
      job: 'j3',
      inputsHash: 'h1',
      plan: { digest: D2, add: 0, change: 0, destroy: 1, destructive: true },
    };
    const old = plan(false);
    expect(plansAfterBookkeeping(facts({ pendingPlan: old, changes: [created] })).supersede).toEqual([
      'j1-plan',
    ]);
    expect(
      plansAfterBookkeeping(facts({ pendingPlan: old, changes: [moved(old, 'Superseded'), created] }))
        .supersede,
    ).toEqual([]);
  });

  it('PS10 the approved plan carries its digest to the apply', () => {
    expect(plansAfterBookkeeping(facts({ pendingPlan: plan(true) })).approved).toEqual({
      name: 'j1-plan',
      digest: D1,
    });
  });
});
