import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { outcomeOf } from '../../../src/core/step-outcome.ts';
import { assertSameDecision } from './dry-run-shadow.ts';

// The dry run shadows every step of the step suite (./harness.ts); these rows prove the comparison itself
// can fail, and what it forgives.

const ref: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' };

describe('dry run parity check', () => {
  it('D1 the same start passes', () => {
    const created = outcomeOf(ref, 'NoState', { job: 'captf-m-m-a-apply-a1-abcdef' });
    expect(() => assertSameDecision(ref, created, created)).not.toThrow();
  });
  it('D2 a different decision fails, naming both', () => {
    const dry = outcomeOf(ref, 'NoState', { job: 'captf-m-m-a-apply-a1-abcdef' });
    const real = outcomeOf(ref, 'Backoff', { requeueAfterSeconds: 60 });
    expect(() => assertSameDecision(ref, dry, real)).toThrow(/dry created\/NoState.*real waiting\/Backoff/);
  });
  it('D3 a different Job name fails', () => {
    const dry = outcomeOf(ref, 'NoState', { job: 'captf-m-m-a-apply-a1-abcdef' });
    const real = outcomeOf(ref, 'NoState', { job: 'captf-m-m-a-apply-a2-123456' });
    expect(() => assertSameDecision(ref, dry, real)).toThrow(/differently/);
  });
  it('D4 what only the perform can meet is forgiven (a lease held in Redis)', () => {
    const dry = outcomeOf(ref, 'NoState', { job: 'captf-m-m-a-apply-a1-abcdef' });
    const real = outcomeOf(ref, 'WaitingForRunLease', { message: 'held', requeueAfterSeconds: 600 });
    expect(() => assertSameDecision(ref, dry, real)).not.toThrow();
  });
  it('D5 a pod of an earlier attempt that the garbage collector removed in between is forgiven, one way only', () => {
    const waiting = outcomeOf(ref, 'WaitingForPreviousAttempt', {
      message: 'pod still runs',
      requeueAfterSeconds: 600,
    });
    const created = outcomeOf(ref, 'NoState', { job: 'captf-m-m-a-apply-a2-123456' });
    expect(() => assertSameDecision(ref, waiting, created)).not.toThrow();
    expect(() => assertSameDecision(ref, created, waiting)).toThrow(/differently/);
  });
});
