import { describe, expect, it } from 'vitest';
import { judgeLock, lockHolderHost } from '../../../src/core/locks.ts';
import { jobName, jobNamePrefixes } from '../../../src/core/names.ts';
import { pod } from './builders.ts';

const prefixes = jobNamePrefixes('TerraformMachine', 'm-a');
const ownPod = `${jobName({ kind: 'TerraformMachine', name: 'm-a', op: 'apply', attempt: 1, inputsHash: 'h', tick: '' })}-x1y2z`;

describe('judgeLock: DESIGN.md section 12', () => {
  it('L1 the holder host is the part after @', () => {
    expect(lockHolderHost({ id: 'L', who: 'root@host-1' })).toBe('host-1');
  });

  it('L2 own Job pod, gone → stale: pass force-unlock to the next Job', () => {
    expect(judgeLock({ id: 'L1', who: `root@${ownPod}` }, prefixes, undefined)).toEqual({
      kind: 'stale',
      reason: 'ForceUnlocked',
      lockId: 'L1',
      holderPod: ownPod,
    });
  });

  it('L3 own Job pod, finished → stale', () => {
    expect(
      judgeLock(
        { id: 'L1', who: `root@${ownPod}` },
        prefixes,
        pod(ownPod, { exitCode: 137 }, { phase: 'Failed' }),
      ).kind,
    ).toBe('stale');
  });

  it('C01/C06: own Job pod still running (or Terminating) → live: LockContended, never unlocked', () => {
    expect(
      judgeLock(
        { id: 'L1', who: `root@${ownPod}` },
        prefixes,
        pod(ownPod, { running: true }, { phase: 'Running' }),
      ).kind,
    ).toBe('live');
  });

  it('L4 a foreign holder is never unlocked (StateLocked)', () => {
    expect(judgeLock({ id: 'L1', who: 'alice@laptop' }, prefixes, undefined)).toEqual({
      kind: 'foreign',
      reason: 'StateLocked',
      who: 'alice@laptop',
    });
    const otherObject = ownPod.replace('-m-a-', '-m-b-');
    expect(judgeLock({ id: 'L1', who: `root@${otherObject}` }, prefixes, undefined).kind).toBe('foreign');
  });
});
