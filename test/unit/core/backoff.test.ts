import { describe, expect, it } from 'vitest';
import {
  BACKOFF_CAP_SECONDS,
  backoffDelaySeconds,
  failureHistory,
  INTERRUPTION_ALLOWANCE,
  retryVerdict,
} from '../../../src/core/backoff.ts';
import { EVIDENCE, type Evidence } from '../../../src/core/classify.ts';
import type { JobRecord } from '../../../src/core/job-record.ts';
import { type HistoryLimits, selectJobsToPrune } from '../../../src/core/prune.ts';
import { at, record } from './builders.ts';

const limits3: HistoryLimits = { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 };

/** The records left after one prune. */
function afterPrune(records: readonly JobRecord[], limits: HistoryLimits): JobRecord[] {
  const pruned = new Set(selectJobsToPrune(records, limits));
  return records.filter((r) => !pruned.has(r.name));
}

/** Apply Jobs ending with `outcomes` in turn, 200 s apart, each bookkept and then pruned (DESIGN.md section 7). */
function afterPruneCycles(outcomes: readonly Evidence[], limits: HistoryLimits): JobRecord[] {
  let records: JobRecord[] = [];
  outcomes.forEach((outcome, i) => {
    records = afterPrune([...records, record('apply', outcome, (i + 1) * 200)], limits);
  });
  return records;
}

/** mulberry32: a fixed seed gives the same histories on every run. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('backoffDelaySeconds: DESIGN.md section 4', () => {
  it.each([
    { id: 'S4.delay-1', name: 'default limit 3: 1m, 2m, 10m, 10m', limit: 3, minutes: [1, 2, 10, 10, 10] },
    { id: 'S4.delay-2', name: 'limit 5: 1, 2, 4, 8, 10m', limit: 5, minutes: [1, 2, 4, 8, 10, 10] },
    {
      id: 'S4.delay-3',
      name: 'limit 10: the 600 s cap still holds',
      limit: 10,
      minutes: [1, 2, 4, 8, 10, 10, 10],
    },
    { id: 'S4.delay-4', name: 'limit 1: the cap from the first failure', limit: 1, minutes: [10, 10] },
  ])('$id $name', ({ limit, minutes }) => {
    expect(minutes.map((_, i) => backoffDelaySeconds(i + 1, limit) / 60)).toEqual(minutes);
  });

  it('no failures, no delay', () => {
    expect(backoffDelaySeconds(0, 3)).toBe(0);
  });
});

/** DESIGN.md section 4: "Counted" and "Not counted", one row per kind of evidence. */
const countingRows: {
  id: string;
  name: string;
  evidence: Evidence;
  counted: number;
  interruptions: number;
}[] = [
  {
    id: 'S4.count-1',
    name: 'step failure is counted',
    evidence: 'step-failed',
    counted: 1,
    interruptions: 0,
  },
  {
    id: 'S4.count-2',
    name: 'image-layout is counted',
    evidence: 'image-layout',
    counted: 1,
    interruptions: 0,
  },
  {
    id: 'S4.count-3',
    name: 'image pull failure is counted',
    evidence: 'image-pull',
    counted: 1,
    interruptions: 0,
  },
  {
    id: 'S4.count-4',
    name: 'deadline kill is counted (even when the runner wrote interrupted)',
    evidence: 'deadline',
    counted: 1,
    interruptions: 0,
  },
  {
    id: 'S4.count-5',
    name: 'missing/unreadable result or OOM kill (kind unknown) is counted',
    evidence: 'unknown',
    counted: 1,
    interruptions: 0,
  },
  {
    id: 'S4.count-6',
    name: 'blocked is not counted',
    evidence: 'destructive-blocked',
    counted: 0,
    interruptions: 0,
  },
  {
    id: 'S4.count-7',
    name: 'awaiting approval is not counted',
    evidence: 'awaiting-approval',
    counted: 0,
    interruptions: 0,
  },
  {
    id: 'S4.count-8',
    name: 'plan-changed is not counted',
    evidence: 'plan-changed',
    counted: 0,
    interruptions: 0,
  },
  {
    id: 'S4.count-9',
    name: 'an interruption that is not a deadline kill is not counted',
    evidence: 'interrupted',
    counted: 0,
    interruptions: 1,
  },
  {
    id: 'S4.count-10',
    name: 'a lock held by a live holder is not counted',
    evidence: 'lock-contended',
    counted: 0,
    interruptions: 0,
  },
];

describe('failureHistory: DESIGN.md section 4', () => {
  it.each(countingRows)('$id $name', ({ evidence, counted, interruptions }) => {
    const history = failureHistory([record('apply', evidence, 100)], 'apply');
    expect([history.counted, history.interruptionsInRow]).toEqual([counted, interruptions]);
  });

  it('S4.walk-1 walks newest first and stops at a success', () => {
    const records = [
      record('apply', 'step-failed', 100),
      record('apply', 'succeeded', 200),
      record('apply', 'step-failed', 300),
      record('apply', 'deadline', 400),
    ];
    expect(failureHistory(records, 'apply')).toEqual({
      counted: 2,
      interruptionsInRow: 0,
      newestFailureMs: at(400).getTime(),
    });
  });

  it('S4.walk-2 counts per op: drift failures do not delay an apply', () => {
    const records = [record('drift', 'step-failed', 100), record('drift', 'step-failed', 200)];
    expect(failureHistory(records, 'apply').counted).toBe(0);
    expect(failureHistory(records, 'drift').counted).toBe(2);
  });

  it('S4.walk-3 ignores Jobs not bookkept yet', () => {
    expect(failureHistory([record('apply', 'step-failed', 100, { bookkept: false })], 'apply').counted).toBe(
      0,
    );
  });
});

describe('retryVerdict: DESIGN.md section 4', () => {
  it('S4.retry-1 the delay runs from the finish of the newest failed Job', () => {
    const verdict = retryVerdict(
      failureHistory([record('apply', 'step-failed', 100), record('apply', 'unknown', 500)], 'apply'),
      3,
    );
    expect(verdict).toEqual({
      kind: 'backoff',
      reason: 'Backoff',
      failures: 2,
      delaySeconds: 120,
      notBeforeMs: at(620).getTime(),
    });
  });

  it('S4.retry-2 no failures → now', () => {
    expect(retryVerdict(failureHistory([record('apply', 'succeeded', 100)], 'apply'), 3)).toEqual({
      kind: 'now',
      reason: 'NoFailures',
    });
  });

  it('C07: drained three times in a row: each retry starts at once, through prune cycles', () => {
    const records = afterPruneCycles(['interrupted', 'interrupted', 'interrupted'], limits3);
    expect(records).toHaveLength(3);
    expect(retryVerdict(failureHistory(records, 'apply'), 3)).toEqual({
      kind: 'now',
      reason: 'InterruptionRetry',
    });
  });

  it(`C07: the ${INTERRUPTION_ALLOWANCE}th interruption in a row brings the normal backoff, through prune cycles`, () => {
    const four = afterPruneCycles(Array(4).fill('interrupted'), limits3);
    expect(retryVerdict(failureHistory(four, 'apply'), 3).kind).toBe('now');
    const five = afterPruneCycles(Array(INTERRUPTION_ALLOWANCE).fill('interrupted'), limits3);
    expect(five).toHaveLength(INTERRUPTION_ALLOWANCE);
    expect(retryVerdict(failureHistory(five, 'apply'), 3)).toMatchObject({
      kind: 'backoff',
      failures: 1,
      delaySeconds: 60,
    });
    const ten = afterPruneCycles(Array(10).fill('interrupted'), limits3);
    expect(retryVerdict(failureHistory(ten, 'apply'), 3)).toMatchObject({
      failures: 3,
      delaySeconds: BACKOFF_CAP_SECONDS,
    });
  });

  it('C07: an interruption run that a success ended is pruned and counts for nothing', () => {
    const records = afterPruneCycles([...Array(6).fill('interrupted'), 'succeeded', 'interrupted'], limits3);
    expect(records.map((r) => r.outcome)).toEqual(['succeeded', 'interrupted']);
    expect(retryVerdict(failureHistory(records, 'apply'), 3).kind).toBe('now');
  });

  it('S4.prune-1 lock-contended runs do not push counted failures out: 120 s before and after pruning', () => {
    const outcomes: Evidence[] = [
      'succeeded',
      'step-failed',
      'step-failed',
      'lock-contended',
      'lock-contended',
    ];
    const all = outcomes.map((outcome, i) => record('apply', outcome, (i + 1) * 200));
    const verdict = retryVerdict(failureHistory(all, 'apply'), 3);
    expect(verdict).toMatchObject({ kind: 'backoff', failures: 2, delaySeconds: 120 });
    expect(retryVerdict(failureHistory(afterPruneCycles(outcomes, limits3), 'apply'), 3)).toEqual(
      retryVerdict(failureHistory(afterPrune(all, limits3), 'apply'), 3),
    );
    expect(retryVerdict(failureHistory(afterPrune(all, limits3), 'apply'), 3)).toEqual(verdict);
  });

  it.each([1, 2, 3, 5])(
    'S4.prune-2 property: pruning never changes the verdict (failedJobsHistoryLimit %i, 400 random histories)',
    (failedJobsHistoryLimit) => {
      const random = seededRandom(failedJobsHistoryLimit);
      const limits = { successfulJobsHistoryLimit: 1 + Math.floor(random() * 3), failedJobsHistoryLimit };
      for (let history = 0; history < 400; history++) {
        const length = Math.floor(random() * 16);
        const outcomes = Array.from(
          { length },
          () => EVIDENCE[Math.floor(random() * EVIDENCE.length)] ?? 'succeeded',
        );
        const all = outcomes.map((outcome, i) => record('apply', outcome, (i + 1) * 200));
        const verdictOf = (records: readonly JobRecord[]) =>
          retryVerdict(failureHistory(records, 'apply'), failedJobsHistoryLimit);
        const pruned = afterPrune(all, limits);
        expect(verdictOf(pruned), outcomes.join(',')).toEqual(verdictOf(all));
        // Pruning after every bookkeeping (the shell's order) ends in the same verdict.
        expect(verdictOf(afterPruneCycles(outcomes, limits)), outcomes.join(',')).toEqual(verdictOf(all));
        expect(selectJobsToPrune(pruned, limits)).toEqual([]);
      }
    },
  );

  it('S4.retry-3 a counted failure ends a run of interruptions', () => {
    const records = [
      record('apply', 'interrupted', 100),
      record('apply', 'step-failed', 200),
      record('apply', 'interrupted', 300),
    ];
    expect(failureHistory(records, 'apply')).toMatchObject({ counted: 1, interruptionsInRow: 1 });
  });
});
