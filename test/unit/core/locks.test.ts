import { describe, expect, it } from 'vitest';
import { judgeReportedLock } from '../../../src/core/lock-evidence.ts';
import { judgeLock, lockHolderHost } from '../../../src/core/locks.ts';
import { type JobNameInput, jobName } from '../../../src/core/names.ts';
import { pod } from './builders.ts';

const base: JobNameInput = {
  kind: 'TerraformMachine',
  name: 'm-a',
  op: 'apply',
  attempt: 1,
  inputsHash: 'h',
  tick: '',
};
const ownJob = jobName(base);
/** The object's own Job names, as the shell lists them by owner UID. */
const prefixes = [ownJob, jobName({ ...base, attempt: 2 })];
const ownPod = `${ownJob}-x1y2z`;

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

  it('L5 object web does not take the lock of a pod of object web-apply (a longer name, same prefix)', () => {
    const web = { ...base, name: 'web' };
    const webJobs = [jobName(web)];
    const webApplyPod = `${jobName({ ...web, name: 'web-apply' })}-abcde`;
    expect(webApplyPod.startsWith('captf-m-web-')).toBe(true);
    expect(judgeLock({ id: 'L1', who: `root@${webApplyPod}` }, webJobs, undefined)).toEqual({
      kind: 'foreign',
      reason: 'StateLocked',
      who: `root@${webApplyPod}`,
    });
  });

  it('L6 object web does not take the lock of web in another namespace (its Jobs are not ours)', () => {
    const web = { ...base, name: 'web' };
    const ourJobs = [jobName({ ...web, inputsHash: 'team-a inputs' })];
    const otherPod = `${jobName({ ...web, inputsHash: 'team-b inputs' })}-abcde`;
    expect(judgeLock({ id: 'L1', who: `root@${otherPod}` }, ourJobs, undefined).kind).toBe('foreign');
  });

  it('L7 a host that only starts with our Job name is foreign: the pod suffix is exactly 5 of [a-z0-9]', () => {
    for (const host of [
      `${ownJob}-abcdef`,
      `${ownJob}-ABCDE`,
      `${ownJob}-abcd`,
      `${ownJob}x-abcde`,
      ownJob,
    ]) {
      expect(judgeLock({ id: 'L1', who: `root@${host}` }, prefixes, undefined).kind, host).toBe('foreign');
    }
  });
});

describe('judgeReportedLock: a holder whose Job is gone (issue 23 item 8)', () => {
  const owner = { kind: 'TerraformMachine' as const, name: 'm-a' };
  const gonePod = `${jobName({ ...base, attempt: 7 })}-q1w2e`;
  const lock = { id: 'L9', who: `root@${gonePod}` };

  it("named like the object's Jobs but not among them: its pod is read live first", () => {
    expect(judgeReportedLock(lock, [], [], owner)).toEqual({ kind: 'read', holderPod: gonePod });
  });

  it('read gone or finished → stale (pruned, or deleted by the deadline enforcement)', () => {
    expect(
      judgeReportedLock(lock, [], [], { ...owner, holderRead: { name: gonePod, pod: undefined } }),
    ).toEqual({
      kind: 'stale',
      reason: 'ForceUnlocked',
      lockId: 'L9',
      holderPod: gonePod,
    });
    const failed = pod(gonePod, { exitCode: 137 }, { phase: 'Failed' });
    expect(
      judgeReportedLock(lock, [], [], { ...owner, holderRead: { name: gonePod, pod: failed } }).kind,
    ).toBe('stale');
  });

  it('read alive: not one of ours (a predecessor of the same name) → foreign, never unlocked', () => {
    const running = pod(gonePod, { running: true }, { phase: 'Running' });
    expect(
      judgeReportedLock(lock, [], [], { ...owner, holderRead: { name: gonePod, pod: running } }).kind,
    ).toBe('foreign');
  });

  it("among the object's own pods (its owner label): judged by that pod, no read", () => {
    const finished = pod(gonePod, { exitCode: 1 }, { phase: 'Failed' });
    expect(judgeReportedLock(lock, [], [finished], owner).kind).toBe('stale');
  });

  it("another object's naming (web vs web-apply) stays foreign without a read", () => {
    const other = `${jobName({ ...base, name: 'm-a-apply' })}-q1w2e`;
    expect(judgeReportedLock({ id: 'L', who: `root@${other}` }, [], [], owner).kind).toBe('foreign');
    expect(judgeReportedLock({ id: 'L', who: 'alice@laptop' }, [], [], owner).kind).toBe('foreign');
  });
});
