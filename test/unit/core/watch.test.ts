import { describe, expect, it } from 'vitest';
import type { JobView, PodView } from '../../../src/core/views.ts';
import { jobNeverStarted, pullTroubleOutlived, watchActiveJob } from '../../../src/core/watch.ts';
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
    deleting: false,
    op: 'apply',
  });

describe('watchActiveJob: DESIGN.md section 5 step 4', () => {
  it('W1 a running Job is looked at again within 300 s (its end, its pods and the deletion are events)', () => {
    expect(
      watchActiveJob({
        now: at(10),
        job: running,
        pods: [runningPod],
        runSecretExists: true,
        deleting: false,
        op: 'apply',
      }),
    ).toEqual({
      kind: 'watch',
      reason: 'JobActive',
      requeueAfterSeconds: 300,
    });
  });

  it('W1b the fallback comes sooner when the deadline enforcement or the stuck check falls due first', () => {
    const watch = (now: number, runSecretExists: boolean) =>
      watchActiveJob({ now: at(now), job: running, pods: [], runSecretExists, deleting: false, op: 'apply' });
    // deadline 3600 + grace 600 + slack 60 = 4260 s after the start
    expect(watch(4100, true)).toMatchObject({ reason: 'JobActive', requeueAfterSeconds: 160 });
    // the per-run Secret is missing: stuck 60 s after the Job's creation
    expect(watch(10, false)).toMatchObject({ reason: 'JobActive', requeueAfterSeconds: 50 });
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

  it('the message names the image the kubelet cannot pull, when it reports it', () => {
    const withImage = pod('p1', { waiting: 'ImagePullBackOff' }, { phase: 'Pending' });
    const [status] = withImage.status?.containerStatuses ?? [];
    if (status) status.image = 'registry.example.com/team/module:v2';
    const decision = watchActiveJob({
      now: at(3),
      job: running,
      pods: [withImage],
      runSecretExists: true,
      deleting: false,
      op: 'apply',
    });
    expect(decision).toMatchObject({
      reason: 'ImagePullBackOff',
      message:
        'the image registry.example.com/team/module:v2 of container source cannot be pulled (ImagePullBackOff)',
    });
    // Without it (an older kubelet, a test double) the container alone is named.
    expect(waitingWith('ImagePullBackOff')).toMatchObject({
      message: 'the image of container source cannot be pulled (ImagePullBackOff)',
    });
  });

  it("the kubelet's pull/back-off cycle does not change the decision, so the status is not rewritten per cycle", () => {
    expect(waitingWith('ErrImagePull')).toEqual(waitingWith('ImagePullBackOff'));
  });

  it('C08: no deletion during the grace period; the deadline is enforced after deadline + grace + 60 s', () => {
    const stuck = pod('p1', { running: true }, { phase: 'Failed', podReason: 'DeadlineExceeded' });
    expect(
      watchActiveJob({
        now: at(3600 + 600 + 59),
        job: running,
        pods: [stuck],
        runSecretExists: true,
        deleting: false,
        op: 'apply',
      }),
    ).toMatchObject({ kind: 'watch', requeueAfterSeconds: 1 });
    expect(
      watchActiveJob({
        now: at(3600 + 600 + 60),
        job: running,
        pods: [stuck],
        runSecretExists: true,
        deleting: false,
        op: 'apply',
      }),
    ).toMatchObject({
      kind: 'delete',
      reason: 'JobDeadlineExceeded',
    });
  });

  it('W2 a Job stuck over 1 min with its Secret missing and every pod Pending is deleted (StuckJobDeleted)', () => {
    const pending = pod('p1', 'no-status', { phase: 'Pending' });
    expect(
      watchActiveJob({
        now: at(59),
        job: running,
        pods: [pending],
        runSecretExists: false,
        deleting: false,
        op: 'apply',
      }),
    ).toMatchObject({ kind: 'watch', requeueAfterSeconds: 1 });
    expect(
      watchActiveJob({
        now: at(60),
        job: running,
        pods: [pending],
        runSecretExists: false,
        deleting: false,
        op: 'apply',
      }),
    ).toMatchObject({ kind: 'delete', reason: 'StuckJobDeleted' });
    expect(
      watchActiveJob({
        now: at(600),
        job: running,
        pods: [runningPod],
        runSecretExists: false,
        deleting: false,
        op: 'apply',
      }),
    ).toMatchObject({ kind: 'watch' });
  });
});

/** A Pending pod whose `source` container has the given status fields. */
const pendingWith = (source: Record<string, unknown>): PodView => ({
  metadata: { name: 'p1' },
  status: { phase: 'Pending', containerStatuses: [{ name: 'source', ...source }] },
});

describe('jobNeverStarted: a deleting object deletes an active Job that never ran OpenTofu', () => {
  const rows: { id: string; name: string; pods: PodView[]; active?: number; never: boolean }[] = [
    {
      id: 'U1',
      name: 'a pod that cannot pull its module image never started',
      pods: [pod('p1', { waiting: 'ImagePullBackOff' }, { phase: 'Pending' })],
      never: true,
    },
    {
      id: 'U2',
      name: 'an unschedulable pod (no status yet) never started',
      pods: [pod('p1', 'no-status', { phase: 'Pending' })],
      never: true,
    },
    { id: 'U3', name: 'no pod listed and none active: nothing started', pods: [], active: 0, never: true },
    { id: 'U4', name: 'no pod listed but one active: proves nothing', pods: [], active: 1, never: false },
    { id: 'U5', name: 'a running source container started', pods: [runningPod], never: false },
    {
      id: 'U6',
      name: 'a Pending pod whose container shows a terminated state ran',
      pods: [pendingWith({ state: { terminated: { exitCode: 1 } } })],
      never: false,
    },
    {
      id: 'U7',
      name: 'a container reported started ran',
      pods: [pendingWith({ state: { waiting: { reason: 'ContainerCreating' } }, started: true })],
      never: false,
    },
    {
      id: 'U8',
      name: 'a container with a last state or a restart ran',
      pods: [
        pendingWith({
          state: { waiting: { reason: 'ImagePullBackOff' } },
          lastState: { terminated: { exitCode: 137 } },
          restartCount: 1,
        }),
      ],
      never: false,
    },
    {
      id: 'U9',
      name: 'a pod that ended (Failed) ran',
      pods: [pod('p1', { exitCode: 1 }, { phase: 'Failed' })],
      never: false,
    },
  ];
  it.each(rows)('$id $name', ({ pods, active, never }) => {
    const job: JobView = { ...running, status: { startTime: iso(0), active: active ?? pods.length } };
    expect(jobNeverStarted(job, pods)).toBe(never);
  });

  it('U10 deleting: a Job whose pod cannot pull is deleted at once (UnstartedJobDeleted); not deleting: watched', () => {
    const pulling = [pod('p1', { waiting: 'ErrImagePull' }, { phase: 'Pending' })];
    const input = { now: at(5), job: running, pods: pulling, runSecretExists: true, op: 'apply' as const };
    expect(watchActiveJob({ ...input, deleting: true })).toMatchObject({
      kind: 'delete',
      reason: 'UnstartedJobDeleted',
    });
    expect(watchActiveJob({ ...input, deleting: false, op: 'apply' })).toMatchObject({
      kind: 'watch',
      reason: 'ImagePullBackOff',
    });
  });

  it('U12 deleting: the destroy Job itself is never deleted for not having started (the deletion started it)', () => {
    const pending = [pod('p1', { waiting: 'ContainerCreating' }, { phase: 'Pending' })];
    expect(
      watchActiveJob({
        now: at(5),
        job: running,
        pods: pending,
        runSecretExists: true,
        deleting: true,
        op: 'destroy',
      }),
    ).toMatchObject({ kind: 'watch', reason: 'JobActive' });
  });

  it('U11 deleting: a Job whose source container runs is never deleted before its deadline', () => {
    expect(
      watchActiveJob({
        now: at(5),
        job: running,
        pods: [runningPod],
        runSecretExists: true,
        deleting: true,
        op: 'apply',
      }),
    ).toMatchObject({ kind: 'watch', reason: 'JobActive' });
  });
});

describe('pull trouble the status shows outlives the pod the Job controller kills at the deadline (C09)', () => {
  const shown = 'the image of container source cannot be pulled (ImagePullBackOff)';
  const atDeadline: JobView = {
    ...running,
    status: {
      startTime: iso(0),
      active: 1,
      conditions: [{ type: 'FailureTarget', status: 'True', reason: 'DeadlineExceeded' }],
    },
  };
  /** What a real kubelet reports for a container still waiting on its image when its pod is killed. */
  const unknown = pod('p1', { exitCode: 137, reason: 'ContainerStatusUnknown', neverStarted: true });
  const decide = (job: JobView, pods: PodView[], pullTroubleShown?: string) =>
    watchActiveJob({
      now: at(40),
      job,
      pods,
      runSecretExists: true,
      deleting: false,
      op: 'apply',
      ...(pullTroubleShown === undefined ? {} : { pullTroubleShown }),
    });

  it.each([
    ['the killed container is ContainerStatusUnknown', [unknown]],
    ['the pod is gone', []],
    [
      'the pod is deleted and its container is no longer waiting',
      [
        {
          ...pod('p1', 'no-status', { phase: 'Pending' }),
          metadata: { name: 'p1', deletionTimestamp: iso(31) },
        },
      ],
    ],
  ])('%s: still ImagePullBackOff, with the message shown', (_name, pods) => {
    expect(decide(atDeadline, pods, shown)).toMatchObject({
      kind: 'watch',
      reason: 'ImagePullBackOff',
      message: shown,
    });
    expect(pullTroubleOutlived(atDeadline, pods)).toBe(true);
  });

  it('the real kubelet gives the container it never started `startedAt: null`: it never started', () => {
    const reported: PodView = {
      metadata: { name: 'p1', deletionTimestamp: iso(61) },
      status: {
        phase: 'Failed',
        containerStatuses: [
          {
            name: 'source',
            state: {
              terminated: {
                exitCode: 137,
                reason: 'ContainerStatusUnknown',
                startedAt: null,
                finishedAt: null,
              },
            },
          },
        ],
      },
    };
    expect(pullTroubleOutlived(atDeadline, [reported])).toBe(true);
  });

  it('no trouble shown before: the ending Job is just active', () => {
    expect(decide(atDeadline, [unknown])).toMatchObject({ kind: 'watch', reason: 'JobActive' });
  });

  it('a pull that recovered (the source container started) is judged by what the container does', () => {
    expect(decide(atDeadline, [pod('p1', { exitCode: 143 }, { phase: 'Failed' })], shown)).toMatchObject({
      reason: 'JobActive',
    });
    expect(decide(running, [runningPod], shown)).toMatchObject({ reason: 'JobActive' });
  });

  it('a Job that is not ending, whose source container waits for its init container, is active', () => {
    const initializing = pod('p1', { waiting: 'PodInitializing' }, { phase: 'Pending' });
    expect(decide(running, [initializing], shown)).toMatchObject({ reason: 'JobActive' });
  });
});
