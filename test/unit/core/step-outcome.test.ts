import { describe, expect, it } from 'vitest';
import {
  echoStartsNextStep,
  outcomeOf,
  REASON_TABLE,
  type StepReason,
} from '../../../src/core/step-outcome.ts';

const ref = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' } as const;
const reasons = Object.keys(REASON_TABLE) as StepReason[];

describe('the echo column of the reason table', () => {
  it('the finalizer write, a conflict, an outage and a released object: their echo starts the next step', () => {
    expect(reasons.filter(echoStartsNextStep).sort()).toEqual([
      'Conflict',
      'DeletingForMove',
      'DeletingWithoutState',
      'FinalizerAdded',
      'Unavailable',
    ]);
  });

  it('every outcome that leaves the object in doubt or released says so, whatever its reason', () => {
    for (const reason of reasons) {
      const outcome = outcomeOf(ref, reason, { requeueAfterSeconds: 5 });
      if (outcome.action === 'unavailable' || outcome.action === 'finalized')
        expect(echoStartsNextStep(reason), reason).toBe(true);
    }
  });

  it('waits, Job starts and bookkeeping are the step’s own last word: their echo needs no step', () => {
    for (const reason of [
      'Backoff',
      'AwaitingApproval',
      'InputsChanged',
      'ApplySucceeded',
      'UpToDate',
    ] as const)
      expect(echoStartsNextStep(reason), reason).toBe(false);
  });
});
