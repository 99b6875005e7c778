import { describe, expect, it } from 'vitest';
import { finishedCondition } from '../../../src/core/job-conditions.ts';
import { bookkeptAnnotations, jobRecord } from '../../../src/core/job-record.ts';
import type { JobView } from '../../../src/core/views.ts';
import { at, iso, job } from './builders.ts';

describe('jobRecord', () => {
  const labelled: JobView = {
    metadata: {
      name: 'captf-m-m-a-apply-a2-abcdef',
      creationTimestamp: new Date(at(0)),
      labels: { 'captf.io/op': 'apply', 'captf.io/attempt': '2' },
      annotations: { 'captf.io/inputs-hash': 'h1', ...bookkeptAnnotations('step-failed', at(400)) },
    },
    status: {
      conditions: [
        { type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', lastTransitionTime: iso(390) },
      ],
    },
  };

  it('reads op, attempt, inputs hash, outcome and finish from labels and annotations (Date or string times)', () => {
    expect(jobRecord(labelled)).toEqual({
      name: 'captf-m-m-a-apply-a2-abcdef',
      op: 'apply',
      attempt: 2,
      inputsHash: 'h1',
      createdAtMs: at(0).getTime(),
      finished: true,
      finishedAtMs: at(400).getTime(),
      bookkept: true,
      outcome: 'step-failed',
      deleting: false,
    });
  });

  it('a Job without our op label is not ours to count', () => {
    expect(jobRecord({ metadata: { name: 'x' } })).toBeUndefined();
  });

  it('a finished Job is one with Complete or Failed True (C11: FailureTarget alone is not)', () => {
    expect(finishedCondition(job([['Complete']]))?.type).toBe('Complete');
    expect(finishedCondition(job([['Failed', 'DeadlineExceeded']]))?.type).toBe('Failed');
    expect(finishedCondition(job([['FailureTarget', 'DeadlineExceeded']]))).toBeUndefined();
    const terminating = { ...job([['FailureTarget', 'DeadlineExceeded']]), metadata: labelled.metadata };
    expect(jobRecord(terminating)?.finished).toBe(false);
  });
});
