import { describe, expect, it } from 'vitest';
import { classifyJob } from '../../../src/core/classify.ts';
import type { PodView } from '../../../src/core/views.ts';
import { iso, job, pod, result, T0 } from './builders.ts';

// Pods held by our finalizer (`captf.io/result`) after a delete: the deletionTimestamp does not make
// their terminated containers any less evidence (DESIGN.md section 7, C07 and C09).

const interrupted = JSON.stringify(result({ op: 'apply', result: 'interrupted' }));
const failedJob = job([['Failed', 'BackoffLimitExceeded']]);
const deadlineJob = job([['Failed', 'DeadlineExceeded']]);

function deleted(view: PodView): PodView {
  return { ...view, metadata: { ...view.metadata, deletionTimestamp: iso(300) } };
}

describe('classification of pods being deleted', () => {
  it('C07: a drained pod (deleted, exit 3, result interrupted) is JobInterrupted, not counted', () => {
    const c = classifyJob({
      op: 'apply',
      job: failedJob,
      pods: [deleted(pod('p1', { exitCode: 3, message: interrupted }, { disrupted: true }))],
      now: T0,
    });
    expect([c.reason, c.result, c.counted, c.interruption, c.pod]).toEqual([
      'JobInterrupted',
      'interrupted',
      false,
      true,
      'p1',
    ]);
  });

  it('C09: the pod deleted at the deadline while pulling is ImagePullFailed, counted', () => {
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [deleted(pod('p1', { waiting: 'ImagePullBackOff' }))],
      now: T0,
    });
    expect([c.reason, c.counted, c.error?.kind]).toEqual(['ImagePullFailed', true, 'unknown']);
  });

  it('C09: no pod left at the deadline, pull trouble recorded on the object → ImagePullFailed, counted', () => {
    const c = classifyJob({ op: 'apply', job: deadlineJob, pods: [], observedPullTrouble: true, now: T0 });
    expect([c.reason, c.counted, c.error?.kind]).toEqual(['ImagePullFailed', true, 'unknown']);
  });

  it('C09: the summary names the container, from the pod while it waits, else from what the status showed', () => {
    const live = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [deleted(pod('p1', { waiting: 'ErrImagePull' }))],
      now: T0,
    });
    expect(live.error?.summary).toBe(
      'the image of container source could not be pulled before the deadline (ErrImagePull)',
    );
    const remembered = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [pod('p1', { exitCode: 137, reason: 'ContainerStatusUnknown', neverStarted: true })],
      observedPullTrouble: true,
      observedPullMessage: 'the image of container runner cannot be pulled (ImagePullBackOff)',
      now: T0,
    });
    expect([remembered.reason, remembered.error?.summary]).toEqual([
      'ImagePullFailed',
      'the deadline passed while the image of container runner cannot be pulled (ImagePullBackOff)',
    ]);
  });

  it("C09: the real kubelet's report of the pod killed while pulling (startedAt: null) is ImagePullFailed", () => {
    // As kubelet v1.36.3 reported it (test/e2e/failures.test.ts): the Job controller deleted the pod at the
    // deadline; the runner init container had completed, the source container never started.
    const killed: PodView = {
      metadata: { name: 'p1', creationTimestamp: iso(0), deletionTimestamp: iso(61) },
      status: {
        phase: 'Failed',
        initContainerStatuses: [
          {
            name: 'runner',
            state: {
              terminated: { exitCode: 0, reason: 'Completed', startedAt: iso(5), finishedAt: iso(7) },
            },
          },
        ],
        containerStatuses: [
          {
            name: 'source',
            state: {
              terminated: {
                exitCode: 137,
                reason: 'ContainerStatusUnknown',
                message: 'The container could not be located when the pod was terminated',
                startedAt: null,
                finishedAt: null,
              },
            },
          },
        ],
      },
    };
    const c = classifyJob({
      op: 'apply',
      job: deadlineJob,
      pods: [killed],
      observedPullTrouble: true,
      observedPullMessage: 'the image of container source cannot be pulled (ImagePullBackOff)',
      now: T0,
    });
    expect([c.reason, c.counted, c.imageID]).toEqual(['ImagePullFailed', true, undefined]);
  });

  it('C09: no pod left at the deadline and no pull trouble recorded → JobDeadlineExceeded', () => {
    const c = classifyJob({ op: 'apply', job: deadlineJob, pods: [], now: T0 });
    expect([c.reason, c.counted]).toEqual(['JobDeadlineExceeded', true]);
  });
});
