import { describe, expect, it } from 'vitest';
import { classifyJob } from '../../../src/core/classify.ts';
import {
  conditionsAfterRun,
  conditionsForWait,
  conditionTransitions,
  findCondition,
  readyUpdate,
  setCondition,
  setOpCondition,
} from '../../../src/core/conditions.ts';
import { activeStatus } from '../../../src/core/move-status.ts';
import { NO_REDACTION } from '../../../src/core/redaction.ts';
import { waitFor } from '../../../src/core/wait-table.ts';
import type { Condition } from '../../../src/schemas/kinds/condition.ts';
import { at, job, pod, result, T0 } from './builders.ts';

const writeAt = (seconds: number) => ({ now: at(seconds), generation: 7 });
const notDeleting = { provisioned: true, deleting: false };

function run(op: 'apply' | 'drift', text: string, exitCode = 0) {
  return classifyJob({
    op,
    job: job([[exitCode === 0 ? 'Complete' : 'Failed']]),
    pods: [pod('p1', { exitCode, message: text })],
    now: T0,
  });
}

describe('setCondition', () => {
  it('lastTransitionTime changes only when the status changes; observedGeneration always follows the write', () => {
    const first = setCondition(
      [],
      { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'm' },
      writeAt(0),
    );
    const same = setCondition(
      first,
      { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'other' },
      { now: at(100), generation: 8 },
    );
    expect(same[0]).toMatchObject({
      lastTransitionTime: at(0).toISOString(),
      observedGeneration: 8,
      message: 'other',
    });
    const flipped = setCondition(
      same,
      { type: 'Ready', status: 'False', reason: 'ApplyFailed', message: 'm' },
      writeAt(200),
    );
    expect(flipped[0]?.lastTransitionTime).toBe(at(200).toISOString());
    expect(first[0]?.message).toBe('m');
  });
});

describe('conditionsAfterRun: DESIGN.md section 7', () => {
  it('a successful apply: ApplyJobSucceeded True, Ready True', () => {
    const next = conditionsAfterRun(
      [],
      run('apply', JSON.stringify(result({ op: 'apply', result: 'succeeded' }))),
      notDeleting,
      writeAt(0),
    );
    expect(findCondition(next, 'ApplyJobSucceeded')).toMatchObject({
      status: 'True',
      reason: 'ApplySucceeded',
    });
    expect(findCondition(next, 'Ready')).toMatchObject({ status: 'True', reason: 'Provisioned' });
  });

  it('a failed apply: ApplyJobSucceeded False and Ready False with the failure reason and summary', () => {
    const text = JSON.stringify(
      result({ op: 'apply', result: 'failed', error: { kind: 'step', step: 'apply', summary: 'quota' } }),
    );
    const next = conditionsAfterRun([], run('apply', text, 1), notDeleting, writeAt(0));
    expect(findCondition(next, 'ApplyJobSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ApplyFailed',
      message: 'apply failed: quota',
    });
    expect(findCondition(next, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
  });

  it('C12c: a drift check with changes: DriftJobSucceeded True and DriftDetected True, never a failure', () => {
    const text = JSON.stringify(result({ op: 'drift', result: 'succeeded', drift: { detected: true } }));
    const next = conditionsAfterRun([], run('drift', text), notDeleting, writeAt(0));
    expect(findCondition(next, 'DriftJobSucceeded')).toMatchObject({
      status: 'True',
      reason: 'DriftChecked',
    });
    expect(findCondition(next, 'DriftDetected')).toMatchObject({ status: 'True', reason: 'DriftDetected' });
    expect(findCondition(next, 'Ready')?.status).toBe('True');
  });

  it('a successful apply resolves detected drift', () => {
    const drifted = conditionsAfterRun(
      [],
      run('drift', JSON.stringify(result({ op: 'drift', result: 'succeeded', drift: { detected: true } }))),
      notDeleting,
      writeAt(0),
    );
    const next = conditionsAfterRun(
      drifted,
      run('apply', JSON.stringify(result({ op: 'apply', result: 'succeeded' }))),
      notDeleting,
      writeAt(60),
    );
    expect(findCondition(next, 'DriftDetected')).toMatchObject({ status: 'False', reason: 'DriftResolved' });
  });

  it('deleting: Ready False (Deleting)', () => {
    const next = conditionsAfterRun(
      [],
      run('apply', JSON.stringify(result({ op: 'apply', result: 'succeeded' }))),
      { provisioned: true, deleting: true },
      writeAt(0),
    );
    expect(findCondition(next, 'Ready')).toMatchObject({ status: 'False', reason: 'Deleting' });
  });
});

describe('conditionsForWait: DESIGN.md section 6', () => {
  const wait = (reason: 'WaitingForJobSlot' | 'Backoff') =>
    waitFor(reason, {
      now: T0,
      uid: 'u',
      op: 'apply',
      message: 'slots full',
      ...(reason === 'Backoff' ? { untilMs: at(60).getTime() } : {}),
    });

  it('a wait is Unknown, never False, with the wait reason', () => {
    const next = conditionsForWait(
      [],
      wait('WaitingForJobSlot'),
      { provisioned: false, deleting: false },
      writeAt(0),
    );
    expect(findCondition(next, 'ApplyJobSucceeded')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForJobSlot',
    });
    expect(findCondition(next, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'WaitingForJobSlot' });
  });

  it('a backoff keeps the failure that earned it visible: op condition and Ready stay False, no transition', () => {
    const failed: Condition[] = setCondition(
      [],
      { type: 'ApplyJobSucceeded', status: 'False', reason: 'ApplyFailed', message: 'm' },
      writeAt(0),
    );
    const next = conditionsForWait(
      failed,
      wait('Backoff'),
      { provisioned: false, deleting: false },
      writeAt(10),
    );
    expect(findCondition(next, 'ApplyJobSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ApplyFailed',
      lastTransitionTime: writeAt(0).now.toISOString(),
    });
    expect(findCondition(next, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    const afterRun = setCondition(
      failed,
      readyUpdate(failed, { provisioned: false, deleting: false }),
      writeAt(0),
    );
    expect(conditionTransitions(afterRun, next)).toEqual([]);
  });
});

describe('a counted failure stays False until a run of its op succeeds (issue 15, the Failing Jobs runbook)', () => {
  const failed: Condition[] = setCondition(
    [],
    {
      type: 'ApplyJobSucceeded',
      status: 'False',
      reason: 'ApplyFailed',
      message: 'apply failed: plan: boom',
    },
    writeAt(0),
  );

  it('waits that follow it, its retry running and an uncounted run leave it False; an unfailed op goes Unknown', () => {
    const slot = waitFor('WaitingForJobSlot', { now: T0, uid: 'u', op: 'apply', message: 'slots full' });
    const waited = conditionsForWait(failed, slot, { provisioned: true, deleting: false }, writeAt(10));
    expect(findCondition(waited, 'ApplyJobSucceeded')).toEqual(findCondition(failed, 'ApplyJobSucceeded'));
    expect(findCondition(waited, 'Ready')).toMatchObject({ status: 'False', reason: 'ApplyFailed' });

    const running = activeStatus(
      { now: at(20), generation: 7, deleting: false, redactor: NO_REDACTION },
      { conditions: failed, ready: true },
      { name: 'captf-m-x-apply-a2-abc', op: 'apply', attempt: 2, startedAt: at(20).toISOString() },
      'JobActive',
      'the Job runs',
    );
    expect(findCondition(running.conditions, 'ApplyJobSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ApplyFailed',
    });
    expect([running.waitReason, running.activeJob?.attempt]).toEqual(['JobActive', 2]);

    const interrupted = conditionsAfterRun(
      failed,
      run('apply', JSON.stringify(result({ op: 'apply', result: 'interrupted' })), 143),
      notDeleting,
      writeAt(30),
    );
    expect(findCondition(interrupted, 'ApplyJobSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ApplyFailed',
    });

    // The drift op never failed: its wait is Unknown as before.
    const drift = waitFor('WaitingForJobSlot', { now: T0, uid: 'u', op: 'drift', message: 'slots full' });
    expect(
      findCondition(conditionsForWait(failed, drift, notDeleting, writeAt(10)), 'DriftJobSucceeded'),
    ).toMatchObject({ status: 'Unknown', reason: 'WaitingForJobSlot' });
  });

  it('a success, or a new failure, replaces it', () => {
    const succeeded = conditionsAfterRun(
      failed,
      run('apply', JSON.stringify(result({ op: 'apply', result: 'succeeded' }))),
      notDeleting,
      writeAt(40),
    );
    expect(findCondition(succeeded, 'ApplyJobSucceeded')).toMatchObject({ status: 'True' });
    const update = {
      type: 'ApplyJobSucceeded',
      status: 'False',
      reason: 'ImageInvalid',
      message: 'm',
    } as const;
    expect(findCondition(setOpCondition(failed, update, writeAt(50)), 'ApplyJobSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ImageInvalid',
    });
  });
});

describe('conditionTransitions', () => {
  it('names only the conditions whose status changed (one Event per transition)', () => {
    const before = setCondition(
      [],
      { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'm' },
      writeAt(0),
    );
    const same = setCondition(
      before,
      { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'n' },
      writeAt(5),
    );
    expect(conditionTransitions(before, same)).toEqual([]);
    const drift = setCondition(
      same,
      { type: 'DriftDetected', status: 'True', reason: 'DriftDetected', message: 'm' },
      writeAt(5),
    );
    expect(conditionTransitions(before, drift).map((c) => c.type)).toEqual(['DriftDetected']);
  });
});
