import { describe, expect, it } from 'vitest';
import { cachedFactsSuffice } from '../../../src/core/cluster-facts.ts';
import type { StepPlan } from '../../../src/core/step-plan.ts';

// Which plans made from cached cluster facts may be carried out as they are (issue 22,
// src/core/cluster-facts.ts): only a wait or a rest that writes the status and Events; anything else is
// planned again from a live read.

/** A plan that rests and writes nothing but its status; `change` alters one part. */
function plan(change: Partial<StepPlan> = {}): StepPlan {
  return {
    kind: 'plan',
    bookkept: [],
    plans: [],
    spec: undefined,
    status: { waitReason: 'WaitingForDependencies' },
    events: [],
    prune: [],
    releasePods: [],
    lostRunSecrets: [],
    deletePods: [],
    move: { kind: 'rest', healLease: false },
    outcome: { action: 'waiting', reason: 'WaitingForDependencies' } as StepPlan['outcome'],
    ...change,
  };
}

describe('cachedFactsSuffice', () => {
  const carried: { name: string; change: Partial<StepPlan> }[] = [
    { name: 'a wait writing its status and Events', change: {} },
    { name: 'a rest that heals a lease', change: { move: { kind: 'rest', healLease: true } } },
    { name: 'no move at all', change: { move: { kind: 'none' }, status: undefined } },
    { name: 'a running Job watched', change: { move: { kind: 'watch' } as never } },
    { name: 'a bookkeeping', change: { bookkept: [{}] as never } },
    { name: 'a prune', change: { prune: [{}] as never } },
    { name: 'a pod released', change: { releasePods: ['p'] } },
    { name: "a lost run's Secret deleted", change: { lostRunSecrets: ['s'] } },
    {
      name: 'an orphaned pod deleted',
      change: { deletePods: [{ name: 'p', uid: 'u', resourceVersion: '1' }] },
    },
    { name: 'the block-move annotation', change: { blockMove: 'remove' as never } },
    {
      name: 'a bookkeeping that writes a contract field into the spec',
      change: { bookkept: [{}] as never, spec: { providerID: 'x' } },
    },
  ];
  it.each(carried)('$name: carried out from cached facts', ({ change }) => {
    expect(cachedFactsSuffice(plan(change))).toBe(true);
  });

  const live: { name: string; change: Partial<StepPlan> }[] = [
    { name: 'a start', change: { move: { kind: 'start' } as unknown as StepPlan['move'] } },
    {
      name: 'a watch that adopts its Job (the exports in its run config)',
      change: { move: { kind: 'watch', adopt: {} } as never },
    },
    {
      name: 'the finalizers (runner setup unless paused)',
      change: { move: { kind: 'finalizers' } as never },
    },
    { name: 'a Job deleted (the policy deadline)', change: { move: { kind: 'delete-job' } as never } },
    { name: 'a TerraformPlan write (superseded by the inputs hash)', change: { plans: [{}] as never } },
  ];
  it.each(live)('$name: planned again from a live read', ({ change }) => {
    expect(cachedFactsSuffice(plan(change))).toBe(false);
  });
});
