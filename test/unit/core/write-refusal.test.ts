import { describe, expect, it } from 'vitest';
import { findCondition } from '../../../src/core/conditions.ts';
import { REASON_TABLE } from '../../../src/core/step-outcome.ts';
import {
  recordedRefusal,
  recordsRefusal,
  refusalAdvice,
  refusalEvent,
  refusalWaitOf,
  refusedStatus,
  withoutRefusal,
} from '../../../src/core/write-refusal.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';

const at = { now: new Date('2026-01-01T00:00:00Z'), generation: 3 };
const later = { now: new Date('2026-01-01T00:05:00Z'), generation: 3 };
const running: TargetStatus = {
  activeJob: { name: 'j', op: 'apply', attempt: 1, startedAt: '2026-01-01T00:00:00Z' },
  waitReason: 'JobActive',
  conditions: [
    {
      type: 'Ready',
      status: 'True',
      reason: 'Provisioned',
      message: 'x',
      lastTransitionTime: '2025-01-01T00:00:00Z',
    },
  ],
};

describe('write refusals: one shape (issue 23 item 9)', () => {
  it('records the WriteRefused condition and wait and keeps everything else', () => {
    const refused = refusedStatus(running, 'refused: create Secret ns/s: Forbidden (403): quota', at);
    expect(refused.waitReason).toBe('WriteRefused');
    expect(refused.activeJob).toEqual(running.activeJob);
    expect(findCondition(refused.conditions, 'Ready')?.reason).toBe('Provisioned');
    expect(findCondition(refused.conditions, 'WriteRefused')).toMatchObject({
      status: 'True',
      reason: 'WriteRefused',
      message: 'refused: create Secret ns/s: Forbidden (403): quota',
      observedGeneration: 3,
    });
    expect(recordsRefusal(refused)).toBe(true);
  });

  it('the same refusal again keeps its transition time (written once while its cause is unchanged)', () => {
    const once = refusedStatus(running, 'm', at);
    const twice = refusedStatus(once, 'm', later);
    expect(twice).toEqual(once);
  });

  it('a long answer is cut to 1 KiB', () => {
    const refused = refusedStatus(running, 'x'.repeat(5000), at);
    expect(findCondition(refused.conditions, 'WriteRefused')?.message.length).toBe(1024);
  });

  it('a step that gets through removes the condition and the wait, and nothing else', () => {
    const cleared = withoutRefusal(refusedStatus(running, 'm', at));
    expect(recordsRefusal(cleared)).toBe(false);
    expect(cleared.waitReason).toBeUndefined();
    expect(cleared.conditions).toEqual(running.conditions);
    expect(withoutRefusal(running)).toBe(running);
  });

  it('the Event is named by its message: one per distinct refusal', () => {
    expect(refusalEvent('a').transitionKey).toBe(refusalEvent('a').transitionKey);
    expect(refusalEvent('a').transitionKey).not.toBe(refusalEvent('b').transitionKey);
    expect(refusalEvent('a')).toMatchObject({ type: 'Warning', reason: 'WriteRefused' });
  });
});

describe('a create refused in a namespace being deleted (NamespaceTerminating)', () => {
  it('is told by the Status cause, never by the message', () => {
    expect(refusalWaitOf(['NamespaceTerminating'])).toBe('NamespaceTerminating');
    expect(refusalWaitOf(['FieldValueInvalid', 'NamespaceTerminating'])).toBe('NamespaceTerminating');
    expect(refusalWaitOf([])).toBe('WriteRefused');
    expect(refusalWaitOf(['FieldValueForbidden'])).toBe('WriteRefused');
  });

  it('records the same shape under its own wait, and the message says how to let the object go', () => {
    const refused = refusedStatus(
      running,
      'refused: create Job ns/j: being terminated',
      at,
      'NamespaceTerminating',
    );
    expect(refused.waitReason).toBe('NamespaceTerminating');
    expect(findCondition(refused.conditions, 'WriteRefused')).toMatchObject({
      status: 'True',
      reason: 'NamespaceTerminating',
    });
    expect(recordsRefusal(refused)).toBe(true);
    // A step that gets through (the object let go meanwhile) clears it like any refusal.
    const cleared = withoutRefusal(refused);
    expect([recordsRefusal(cleared), cleared.waitReason]).toEqual([false, undefined]);
    expect(recordsRefusal({ waitReason: 'NamespaceTerminating' })).toBe(true);
    const advice = refusalAdvice('NamespaceTerminating');
    expect(advice).toContain('captf.io/accept-empty-state');
    expect(advice).toContain('infrastructure.cluster.x-k8s.io/captf');
    expect(refusalAdvice('WriteRefused')).toBe('');
  });

  it('is looked at again only at the safety interval: a namespace never becomes Active again', () => {
    expect(REASON_TABLE.NamespaceTerminating).toMatchObject({ action: 'waiting', requeue: 600 });
    expect(REASON_TABLE.WriteRefused).toMatchObject({ requeue: 60 });
  });
});

describe('the recorded refusal, for kubectl captf why', () => {
  it('is the message of a True WriteRefused condition, and nothing otherwise', () => {
    const refused = refusedStatus(
      running,
      'refused: create Job ns/j: being terminated',
      at,
      'NamespaceTerminating',
    );
    expect(recordedRefusal(refused.conditions)).toBe('refused: create Job ns/j: being terminated');
    expect(recordedRefusal(running.conditions)).toBeUndefined();
    expect(recordedRefusal(undefined)).toBeUndefined();
    expect(recordedRefusal([{ type: 'WriteRefused', status: 'False', message: 'over' }])).toBeUndefined();
  });
});
