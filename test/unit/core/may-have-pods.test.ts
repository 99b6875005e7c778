import { describe, expect, it } from 'vitest';
import { BLOCK_MOVE_ANNOTATION } from '../../../src/core/block-move.ts';
import { planStep } from '../../../src/core/planner.ts';
import { mayHavePods, type PodEvidence } from '../../../src/core/pods.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import { iso, job, M_A, snapshot, T0 } from './builders.ts';

// Issue 22: the API guard (DESIGN.md section 5 step 7) lists pods only when a Job of the object was ever
// seen; the object's first start pays no pod list. Any trace of a Job makes the list due again.

const fresh: PodEvidence = { jobs: [], meta: {}, status: {} };

describe('mayHavePods', () => {
  it('MP1 an object none of whose Jobs was ever seen has no pods', () => {
    expect(mayHavePods(fresh)).toBe(false);
    expect(
      mayHavePods({ ...fresh, meta: { annotations: { other: 'x' } }, status: { waitReason: 'Backoff' } }),
    ).toBe(false);
  });

  const traces: [string, PodEvidence][] = [
    ['a Job listed', { ...fresh, jobs: [job([])] }],
    [
      'the block-move annotation (a start got past its patch)',
      { ...fresh, meta: { annotations: { [BLOCK_MOVE_ANNOTATION]: '' } } },
    ],
    [
      'status.activeJob',
      { ...fresh, status: { activeJob: { name: 'j', op: 'apply', attempt: 1, startedAt: iso(0) } } },
    ],
    [
      'status.attempts',
      {
        ...fresh,
        status: {
          attempts: { apply: { last: 1, recorded: 0, failures: 0, interruptions: 0, lockContentions: 0 } },
        },
      },
    ],
    ['status.lastRun', { ...fresh, status: { lastRun: { op: 'apply', result: 'failed' } as never } }],
    [
      "a wait for a previous attempt's pod",
      { ...fresh, status: { waitReason: 'WaitingForPreviousAttempt' } },
    ],
  ];
  it.each(traces)('MP2 %s: the pods are listed', (_name, evidence) => {
    expect(mayHavePods(evidence)).toBe(true);
  });
});

describe('the first start reads no pods', () => {
  const snap = (status: Snapshot['status']): Snapshot => snapshot({ ...M_A, status });
  const facts = (s: Snapshot) => ({
    snap: s,
    now: T0,
    config: { runnerImage: 'runner:test', maxActiveJobs: 200, clusterMaxActiveJobs: 20 },
    slots: { installation: 0, cluster: undefined },
  });

  it('MP3 a new object plans its first start without a pod read', () => {
    const planned = planStep(facts(snap({})));
    expect(planned.kind).toBe('plan');
    expect(planned.kind === 'plan' && planned.move.kind).toBe('start');
  });

  it('MP4 an object that recorded an attempt reads its pods before the start', () => {
    expect(
      planStep(
        facts(
          snap({
            attempts: { apply: { last: 1, recorded: 0, failures: 0, interruptions: 0, lockContentions: 0 } },
          }),
        ),
      ),
    ).toEqual({ kind: 'read', read: 'pods' });
  });
});
