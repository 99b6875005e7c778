import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import {
  SAFETY_REQUEUE_MAX_READS,
  SAFETY_REQUEUE_MAX_SECONDS,
  safetyRequeueText,
  withSafetyRequeue,
} from '../../../src/core/safety-requeue.ts';
import { outcomeOf, type StepOutcome } from '../../../src/core/step-outcome.ts';
import { EVENT_SAFETY_SECONDS, WAIT_TABLE, waitFor } from '../../../src/core/wait-table.ts';
import type { WaitReason } from '../../../src/schemas/kinds/wait-reason.ts';

// DESIGN.md section 6: a wait's safety requeue is the table's for each read of the step that found it, so a
// waiting object's safety net costs at most 0.1 reads a minute whatever the wait reads (issue 22).

const ref: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm1' };
const UID = 'b5a1c0de-0000-4000-8000-000000000001';
const now = new Date('2026-12-05T08:00:00Z');

/** The outcome a step that found `reason` answers (the table's requeue, jittered where the table says). */
function waiting(reason: WaitReason): StepOutcome {
  const wait = waitFor(reason, { now, uid: UID, message: 'm' });
  return outcomeOf(ref, reason, { requeueAfterSeconds: wait.requeueAfterSeconds, message: wait.message });
}

const SAFETY_NET = (Object.keys(WAIT_TABLE) as WaitReason[]).filter((r) => WAIT_TABLE[r].safetyNet);
const POLLED = (Object.keys(WAIT_TABLE) as WaitReason[]).filter((r) => !WAIT_TABLE[r].safetyNet);

describe('the safety requeue, priced by its look', () => {
  it('the safety-net waits are those an event, a release or a person ends; the time-driven and polled ones are not', () => {
    expect(SAFETY_NET).toEqual(
      expect.arrayContaining([
        'WaitingForDependencies',
        'VariablesSecretNotOptedIn',
        'WaitingForRunLease',
        'WaitingForJobSlot',
        'WaitingForClusterOperation',
        'WaitingForOwner',
        'WaitingForClusterInfrastructure',
        'WaitingForBootstrapData',
        'StateMissing',
        'Paused',
      ]),
    );
    expect(POLLED).toEqual(
      expect.arrayContaining([
        'Backoff',
        'LockContended',
        'JobPolicyInvalid',
        'AwaitingApproval',
        'WaitingForPreviousAttempt',
        'WaitingForCache',
        'WriteRefused',
        'JobActive',
        // Its look is the only way out of a namespace being deleted for an object that holds nothing.
        'NamespaceTerminating',
      ]),
    );
  });

  it.each(SAFETY_NET)('%s: the requeue once per read, 1 to %i', (reason) => {
    const found = waiting(reason);
    const base = found.requeueAfterSeconds ?? Number.NaN;
    expect(base).toBeGreaterThanOrEqual(WAIT_TABLE[reason].requeueSeconds);
    expect(withSafetyRequeue(found, 0).requeueAfterSeconds).toBe(base);
    expect(withSafetyRequeue(found, 1).requeueAfterSeconds).toBe(base);
    expect(withSafetyRequeue(found, 2).requeueAfterSeconds).toBe(2 * base);
    expect(withSafetyRequeue(found, 3).requeueAfterSeconds).toBe(3 * base);
    // At most an hour: the waiter's registration (functions/compose.ts) outlives it.
    expect(withSafetyRequeue(found, 40).requeueAfterSeconds).toBe(
      Math.min(SAFETY_REQUEUE_MAX_SECONDS, SAFETY_REQUEUE_MAX_READS * base),
    );
    expect(withSafetyRequeue(found, 6).requeueAfterSeconds).toBeLessThanOrEqual(SAFETY_REQUEUE_MAX_SECONDS);
    // Everything else of the outcome is kept.
    const { requeueAfterSeconds: _, ...rest } = withSafetyRequeue(found, 2);
    const { requeueAfterSeconds: __, ...before } = found;
    expect(rest).toEqual(before);
  });

  it('a wait that reads its object and a Secret (10 min each) costs at most 0.1 reads per object per minute', () => {
    const found = withSafetyRequeue(waiting('WaitingForDependencies'), 2);
    const seconds = found.requeueAfterSeconds ?? 0;
    expect(seconds).toBeGreaterThanOrEqual(2 * EVENT_SAFETY_SECONDS);
    expect(2 / (seconds / 60)).toBeLessThanOrEqual(0.1);
  });

  it.each(POLLED)('%s: its requeue is its own, whatever the step read', (reason) => {
    const found = outcomeOf(ref, reason, { requeueAfterSeconds: 30, message: 'm' });
    expect(withSafetyRequeue(found, 5)).toBe(found);
  });

  it('outcomes that are not waits keep their requeue (an idle step, a created Job, a deferred step, one gone)', () => {
    for (const found of [
      outcomeOf(ref, 'UpToDate', { requeueAfterSeconds: 3600 }),
      outcomeOf(ref, 'NoState', { job: 'captf-m-m1-apply-a1-abcdef' }),
      outcomeOf(ref, 'StepLockHeld'),
      outcomeOf(ref, 'ObjectGone'),
    ])
      expect(withSafetyRequeue(found, 4)).toBe(found);
  });

  it('kubectl captf why says the range a person can expect, and that an event comes first', () => {
    expect(safetyRequeueText(618)).toBe(
      'woken when what it waits for changes; otherwise looked at again in 11 to 60 min, in case an event was lost (the more a look reads, the later it comes)',
    );
    expect(safetyRequeueText(600)).toContain('in 10 to 60 min');
  });
});
