import { describe, expect, it } from 'vitest';
import { selectJobsToPrune } from '../../../src/core/prune.ts';
import { record } from './builders.ts';

const limits = { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 };

describe('selectJobsToPrune: DESIGN.md section 7', () => {
  it('P1 above the limits, oldest first, per op', () => {
    const successes = [1, 2, 3, 4, 5].map((i) => record('apply', 'succeeded', i * 100, { name: `s${i}` }));
    const drifts = [1, 2, 3, 4].map((i) => record('drift', 'succeeded', i * 100 + 50, { name: `d${i}` }));
    expect(selectJobsToPrune([...successes, ...drifts], limits)).toEqual(['s1', 'd1', 's2']);
  });

  it('P2 keeps the newest failure while no newer success exists, even with a failed limit of 1', () => {
    const records = [
      record('apply', 'succeeded', 100, { name: 'ok' }),
      record('apply', 'step-failed', 200, { name: 'f1' }),
      record('apply', 'step-failed', 300, { name: 'f2' }),
    ];
    expect(selectJobsToPrune(records, { successfulJobsHistoryLimit: 0, failedJobsHistoryLimit: 1 })).toEqual([
      'f1',
    ]);
  });

  it('P3 keeps the newest success even with a successful limit of 0', () => {
    const records = [
      record('apply', 'succeeded', 100, { name: 'a' }),
      record('apply', 'succeeded', 200, { name: 'b' }),
    ];
    expect(selectJobsToPrune(records, { successfulJobsHistoryLimit: 0, failedJobsHistoryLimit: 1 })).toEqual([
      'a',
    ]);
  });

  it('P4 never selects running, un-bookkept or already deleting Jobs', () => {
    const records = [1, 2, 3, 4, 5].map((i) => record('apply', 'step-failed', i * 100, { name: `f${i}` }));
    const extra = [
      record('apply', 'step-failed', 1, { name: 'running', finished: false, bookkept: false }),
      record('apply', 'step-failed', 2, { name: 'unbookkept', bookkept: false }),
      record('apply', 'step-failed', 3, { name: 'deleting', deleting: true }),
    ];
    expect(selectJobsToPrune([...records, ...extra], limits)).toEqual(['f1', 'f2']);
  });

  it('C14: thirty runs with limits 3 and 3 leave the limits plus the kept newest success/failure', () => {
    const records = Array.from({ length: 30 }, (_, i) =>
      record('apply', i % 3 === 0 ? 'step-failed' : 'succeeded', i * 100, { name: `r${i}` }),
    );
    const pruned = new Set(selectJobsToPrune(records, limits));
    const kept = records.filter((r) => !pruned.has(r.name)).map((r) => r.name);
    expect(kept).toEqual(['r21', 'r24', 'r26', 'r27', 'r28', 'r29']);
  });

  it('P5 blocked and lock-contended runs never evict counted failures; only the newest waiting run stays', () => {
    const records = [
      record('apply', 'step-failed', 100, { name: 'f1' }),
      record('apply', 'step-failed', 200, { name: 'f2' }),
      record('apply', 'lock-contended', 300, { name: 'l1' }),
      record('apply', 'awaiting-approval', 400, { name: 'b1' }),
      record('apply', 'lock-contended', 500, { name: 'l2' }),
    ];
    expect(selectJobsToPrune(records, limits)).toEqual(['l1', 'b1']);
  });

  it('P6 keeps the current run of interruptions up to the allowance plus the failed limit; older ones go', () => {
    const old = record('apply', 'interrupted', 50, { name: 'old' });
    const failure = record('apply', 'step-failed', 60, { name: 'f' });
    const run = Array.from({ length: 9 }, (_, i) =>
      record('apply', 'interrupted', 100 + i * 100, { name: `i${i + 1}` }),
    );
    // 5 - 1 + 3 = 7 of the current run are kept; with them the delay is already at its cap.
    expect(selectJobsToPrune([old, failure, ...run], limits)).toEqual(['old', 'i1', 'i2']);
  });
});
