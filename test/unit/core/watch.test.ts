import { describe, expect, it } from 'vitest';
import type { JobView } from '../../../src/core/views.ts';
import { watchActiveJob } from '../../../src/core/watch.ts';
import { at, iso, pod } from './builders.ts';

const running: JobView = {
  metadata: { name: 'J1', creationTimestamp: iso(0) },
  spec: { activeDeadlineSeconds: 3600 },
  status: { startTime: iso(0), active: 1 },
};
const runningPod = pod('p1', { running: true }, { phase: 'Running' });
/** The decision on `running` while its pod's container waits with the kubelet's `reason`. */
const waitingWith = (reason: string) =>
  watchActiveJob({
    now: at(3),
    job: running,
    pods: [pod('p1', { waiting: reason }, { phase: 'Pending' })],
    runSecretExists: true,
  });

describe('watchActiveJob: DESIGN.md section 5 step 4', () => {
  it('W1 a running Job is looked at again within 60 s', () => {
    expect(watchActiveJob({ now: at(10), job: running, pods: [runningPod], runSecretExists: true })).toEqual({
      kind: 'watch',
      reason: 'JobActive',
      requeueAfterSeconds: 60,
    });
  });

  it('C09: pull trouble surfaces at once as ImagePullBackOff', () => {
    const shown = (reason: string) => ({
      kind: 'watch',
      reason: 'ImagePullBackOff',
      message: expect.stringContaining(reason),
    });
    expect(waitingWith('ErrImagePull')).toMatchObject(shown('ImagePullBackOff'));
    expect(waitingWith('ImagePullBackOff')).toMatchObject(shown('ImagePullBackOff'));
    expect(waitingWith('InvalidImageName')).toMatchObject(shown('InvalidImageName'));
  });

  it("the kubelet's pull/back-off cycle does not change the decision, so the status is not rewritten per cycle", () => {
    expect(waitingWith('ErrImagePull')).toEqual(waitingWith('ImagePullBackOff'));
  });

  it('C08: no deletion during the grace period; the deadline is enforced after deadline + grace + 60 s', () => {
    const stuck = pod('p1', { running: true }, { phase: 'Failed', podReason: 'DeadlineExceeded' });
    expect(
      watchActiveJob({ now: at(3600 + 600 + 59), job: running, pods: [stuck], runSecretExists: true }),
    ).toMatchObject({ kind: 'watch', requeueAfterSeconds: 1 });
    expect(
      watchActiveJob({ now: at(3600 + 600 + 60), job: running, pods: [stuck], runSecretExists: true }),
    ).toMatchObject({
      kind: 'delete',
      reason: 'JobDeadlineExceeded',
    });
  });

  it('W2 a Job stuck over 1 min with its Secret missing and every pod Pending is deleted (StuckJobDeleted)', () => {
    const pending = pod('p1', 'no-status', { phase: 'Pending' });
    expect(
      watchActiveJob({ now: at(59), job: running, pods: [pending], runSecretExists: false }),
    ).toMatchObject({ kind: 'watch', requeueAfterSeconds: 1 });
    expect(
      watchActiveJob({ now: at(60), job: running, pods: [pending], runSecretExists: false }),
    ).toMatchObject({ kind: 'delete', reason: 'StuckJobDeleted' });
    expect(
      watchActiveJob({ now: at(600), job: running, pods: [runningPod], runSecretExists: false }),
    ).toMatchObject({ kind: 'watch' });
  });
});
