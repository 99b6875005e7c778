import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type ContainerState,
  lostRuntime,
  type PodRuntime,
  podPhase,
  podStatus,
} from '../../../src/local/node/pod-status.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:01:00Z');

const waiting = (reason: 'PodInitializing' | 'ErrImagePull' = 'PodInitializing'): ContainerState => ({
  kind: 'waiting',
  reason,
});
const running: ContainerState = { kind: 'running', startedAt: t0, containerId: 'c', imageId: 'i' };
const exited = (exitCode: number): ContainerState => ({
  kind: 'terminated',
  exitCode,
  reason: exitCode === 0 ? 'Completed' : 'Error',
  startedAt: t0,
  finishedAt: t1,
});
const runtime = (
  init: ContainerState[],
  app: ContainerState[],
  extra: Partial<PodRuntime> = {},
): PodRuntime => ({
  startTime: t0,
  sandboxReady: true,
  init,
  app,
  deadlineExceeded: false,
  stopped: false,
  ...extra,
});

describe('podPhase (restartPolicy Never)', () => {
  const rows = [
    { id: 'PH1', name: 'init pending -> Pending', rt: runtime([waiting()], [waiting()]), phase: 'Pending' },
    { id: 'PH2', name: 'init running -> Pending', rt: runtime([running], [waiting()]), phase: 'Pending' },
    { id: 'PH3', name: 'init failed -> Failed', rt: runtime([exited(1)], [waiting()]), phase: 'Failed' },
    {
      id: 'PH4',
      name: 'image pull failing -> Pending',
      rt: runtime([exited(0)], [waiting('ErrImagePull')]),
      phase: 'Pending',
    },
    { id: 'PH5', name: 'app running -> Running', rt: runtime([exited(0)], [running]), phase: 'Running' },
    { id: 'PH6', name: 'all exit 0 -> Succeeded', rt: runtime([exited(0)], [exited(0)]), phase: 'Succeeded' },
    { id: 'PH7', name: 'one non-zero -> Failed', rt: runtime([], [exited(0), exited(2)]), phase: 'Failed' },
    {
      id: 'PH8',
      name: 'one running, one done -> Running',
      rt: runtime([], [running, exited(0)]),
      phase: 'Running',
    },
    {
      id: 'PH9',
      name: 'deadline -> Failed even while running (C08)',
      rt: runtime([], [running], { deadlineExceeded: true }),
      phase: 'Failed',
    },
    {
      id: 'PH10',
      name: 'deleted before starting -> Failed once stopped',
      rt: runtime([], [waiting('ErrImagePull')], { stopped: true }),
      phase: 'Failed',
    },
    {
      id: 'PH11',
      name: 'deleted, but exited 0 on SIGTERM -> Succeeded',
      rt: runtime([], [exited(0)], { stopped: true }),
      phase: 'Succeeded',
    },
  ] as const;
  it.each(rows)('$id $name', ({ rt, phase }) => {
    expect(podPhase(rt)).toBe(phase);
  });
});

const pod: V1Pod = {
  metadata: { name: 'p', namespace: 'team-a', uid: 'u' },
  spec: {
    initContainers: [{ name: 'runner', image: 'captf.local/runner:1' }],
    containers: [{ name: 'source', image: 'captf.local/module:1' }],
  },
  status: {
    phase: 'Pending',
    qosClass: 'Burstable',
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: t0 },
      { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', lastTransitionTime: t0 },
      { type: 'Initialized', status: 'False', lastTransitionTime: t0 },
    ],
  },
};
const conditionsOf = (status: ReturnType<typeof podStatus>) =>
  Object.fromEntries((status.conditions ?? []).map((condition) => [condition.type, condition]));

describe('podStatus', () => {
  it('keeps conditions the kubelet does not own and the fields it does not write', () => {
    const status = podStatus(pod, runtime([running], [waiting()]), t1);
    const conditions = conditionsOf(status);
    expect(conditions.PodScheduled).toEqual({ type: 'PodScheduled', status: 'True', lastTransitionTime: t0 });
    expect(conditions.DisruptionTarget?.reason).toBe('EvictionByEvictionAPI');
    expect(status.qosClass).toBe('Burstable');
    expect(status.podIP).toBe('127.0.0.1');
    expect(status.startTime).toEqual(t0);
  });

  it('a condition keeps its lastTransitionTime until its status changes', () => {
    const stillInitialising = conditionsOf(podStatus(pod, runtime([running], [waiting()]), t1));
    expect(stillInitialising.Initialized).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [runner]',
      lastTransitionTime: t0,
    });
    const initialised = conditionsOf(podStatus(pod, runtime([exited(0)], [running]), t1));
    expect(initialised.Initialized).toEqual({ type: 'Initialized', status: 'True', lastTransitionTime: t1 });
    expect(initialised.Ready?.status).toBe('True');
  });

  const readiness = [
    {
      id: 'RD1',
      name: 'waiting app -> ContainersNotReady',
      rt: runtime([exited(0)], [waiting()]),
      reason: 'ContainersNotReady',
    },
    {
      id: 'RD2',
      name: 'Succeeded -> PodCompleted',
      rt: runtime([exited(0)], [exited(0)]),
      reason: 'PodCompleted',
    },
    { id: 'RD3', name: 'Failed -> PodFailed', rt: runtime([exited(0)], [exited(1)]), reason: 'PodFailed' },
  ];
  it.each(readiness)('$id $name', ({ rt, reason }) => {
    const conditions = conditionsOf(podStatus(pod, rt, t1));
    expect(conditions.Ready).toMatchObject({ status: 'False', reason });
    expect(conditions.ContainersReady).toMatchObject({ status: 'False', reason });
  });

  it('container statuses: waiting reasons, exit codes, restartCount 0, image IDs', () => {
    const status = podStatus(
      pod,
      runtime([exited(0)], [{ kind: 'waiting', reason: 'ImagePullBackOff', message: 'Back-off' }]),
      t1,
    );
    expect(status.initContainerStatuses?.[0]).toMatchObject({
      name: 'runner',
      restartCount: 0,
      state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: t1 } },
    });
    expect(status.containerStatuses?.[0]).toMatchObject({
      name: 'source',
      image: 'captf.local/module:1',
      imageID: '',
      restartCount: 0,
      ready: false,
      state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off' } },
    });
  });

  it('C08: the deadline writes Failed/DeadlineExceeded at once, with the container still running', () => {
    const status = podStatus(pod, runtime([exited(0)], [running], { deadlineExceeded: true }), t1);
    expect(status).toMatchObject({
      phase: 'Failed',
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
    });
    expect(status.containerStatuses?.[0]?.state?.running).toBeDefined();
  });
});

describe('lostRuntime (node restart)', () => {
  it('a running container becomes terminated{137, ContainerStatusUnknown}; finished ones keep their result', () => {
    const started: V1Pod = {
      ...pod,
      status: {
        phase: 'Running',
        startTime: t0,
        initContainerStatuses: [
          {
            name: 'runner',
            image: 'r',
            imageID: 'i',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 0, finishedAt: t0, message: 'copied' } },
          },
        ],
        containerStatuses: [
          {
            name: 'source',
            image: 'm',
            imageID: 'j',
            ready: true,
            restartCount: 0,
            state: { running: { startedAt: t0 } },
          },
        ],
      },
    };
    const lost = lostRuntime(started, t1);
    expect(lost?.init[0]).toMatchObject({
      kind: 'terminated',
      exitCode: 0,
      reason: 'Completed',
      message: 'copied',
    });
    expect(lost?.app[0]).toMatchObject({
      kind: 'terminated',
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      finishedAt: t1,
    });
    expect(lost ? podPhase(lost) : undefined).toBe('Failed');
  });

  it('a pod that never started a container is not lost: the node runs it', () => {
    expect(lostRuntime(pod, t1)).toBeUndefined();
  });
});
