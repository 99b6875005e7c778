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
    move: { kind: 'rest', healLease: false },
    outcome: { action: 'waiting', reason: 'WaitingForDependencies' } as StepPlan['outcome'],
    ...change,
  };
}

describe('cachedFactsSuffice', () => {
  it('a wait or rest writing its status and Events, or no move at all: carried out from cached facts', () => {
    expect(cachedFactsSuffice(plan())).toBe(true);
    expect(cachedFactsSuffice(plan({ move: { kind: 'rest', healLease: true } }))).toBe(true);
    expect(cachedFactsSuffice(plan({ move: { kind: 'none' }, status: undefined }))).toBe(true);
  });

  const live: { name: string; change: Partial<StepPlan> }[] = [
    { name: 'a start', change: { move: { kind: 'start' } as unknown as StepPlan['move'] } },
    { name: 'a watch (it may adopt a Job with the exports)', change: { move: { kind: 'watch' } as never } },
    {
      name: 'the finalizers (runner setup unless paused)',
      change: { move: { kind: 'finalizers' } as never },
    },
    { name: 'a Job deleted', change: { move: { kind: 'delete-job' } as never } },
    { name: 'a bookkeeping', change: { bookkept: [{}] as never } },
    { name: 'a TerraformPlan write', change: { plans: [{}] as never } },
    { name: 'a spec write', change: { spec: { providerID: 'x' } } },
    { name: 'a prune', change: { prune: [{}] as never } },
    { name: 'a pod released', change: { releasePods: ['p'] } },
    { name: 'the block-move annotation', change: { blockMove: 'remove' as never } },
  ];
  it.each(live)('$name: planned again from a live read', ({ change }) => {
    expect(cachedFactsSuffice(plan(change))).toBe(false);
  });
});
