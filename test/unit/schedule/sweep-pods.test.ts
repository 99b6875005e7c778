import { describe, expect, it } from 'vitest';
import { podsToReleaseInSweep, type SweptJob, type SweptPod } from '../../../src/schedule/sweep.ts';

// The sweep's share of our pod finalizer (DESIGN.md section 8; src/core/pod-release.ts): pods whose Job is
// gone are released; a pod whose Job was listed and still awaits bookkeeping is not.

const OURS = 'captf.io/result';

function held(name: string, jobUid: string, deleted = true): SweptPod {
  return {
    namespace: 'team-a',
    name,
    view: {
      metadata: {
        name,
        finalizers: [OURS],
        ownerReferences: [{ kind: 'Job', name: 'j', uid: jobUid }],
        ...(deleted ? { deletionTimestamp: '2026-11-29T12:05:00Z' } : {}),
      },
    },
  };
}

function swept(name: string, fields: Partial<SweptJob> = {}): SweptJob {
  return { namespace: 'team-a', name, owner: undefined, finished: true, bookkept: false, ...fields };
}

describe('podsToReleaseInSweep', () => {
  it('C14: a pod of a Job deleted by hand is released; a drained pod of an un-bookkept Job keeps its result', () => {
    const pods = [held('p-gone', 'uid-gone'), held('p-waiting', 'uid-1'), held('p-booked', 'uid-2')];
    const jobs = [swept('j1', { uid: 'uid-1' }), swept('j2', { uid: 'uid-2', bookkept: true })];
    expect(podsToReleaseInSweep(pods, jobs).map((p) => p.name)).toEqual(['p-gone', 'p-booked']);
  });

  it('a live pod of a bookkept Job stays held until its Job goes', () => {
    const jobs = [swept('j2', { uid: 'uid-2', bookkept: true })];
    expect(podsToReleaseInSweep([held('p-live', 'uid-2', false)], jobs)).toEqual([]);
  });

  it('a pod whose Job is being deleted before it finished is released (that Job is never bookkept)', () => {
    const jobs = [swept('j3', { uid: 'uid-3', finished: false, deleting: true })];
    expect(podsToReleaseInSweep([held('p-3', 'uid-3')], jobs).map((p) => p.name)).toEqual(['p-3']);
  });
});
