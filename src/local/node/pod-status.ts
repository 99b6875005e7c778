import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';

/**
 * The pod status a kubelet reports, as a pure function of what the local node knows about the pod's
 * containers (pkg/kubelet/kubelet_pods.go getPhase and generateAPIPodStatus; pkg/kubelet/status
 * generate.go for the conditions). Only `restartPolicy: Never` is modelled: Job pods here never restart.
 */

/** Why a container has not started (the kubelet's reasons for `state.waiting`). */
export type WaitingReason =
  | 'PodInitializing'
  | 'ContainerCreating'
  | 'ErrImagePull'
  | 'ImagePullBackOff'
  | 'InvalidImageName'
  | 'CreateContainerConfigError';

/** Why a container stopped (`state.terminated.reason`). */
export type TerminatedReason =
  /** exit code 0 */
  | 'Completed'
  /** non-zero exit code */
  | 'Error'
  /** the process could not be started (containerd's reason; exit code 128) */
  | 'StartError'
  /** the node lost the process (it restarted while the container ran) */
  | 'ContainerStatusUnknown';

/** One container as the node sees it. Times are wall-clock Dates; ids are opaque strings. */
export type ContainerState =
  | { kind: 'waiting'; reason: WaitingReason; message?: string; imageId?: string }
  | { kind: 'running'; startedAt: Date; containerId: string; imageId: string }
  | {
      kind: 'terminated';
      exitCode: number;
      reason: TerminatedReason;
      message?: string;
      startedAt?: Date;
      finishedAt: Date;
      containerId?: string;
      imageId?: string;
    };

/** What the node knows about one pod; container states are indexed like the spec's lists. */
export interface PodRuntime {
  /** When the node accepted the pod (`status.startTime`, the origin of `activeDeadlineSeconds`). */
  startTime: Date;
  /** Volumes are materialised (`PodReadyToStartContainers`). */
  sandboxReady: boolean;
  init: ContainerState[];
  app: ContainerState[];
  /** Set when the node failed the pod for running past `spec.activeDeadlineSeconds`. */
  deadlineExceeded: boolean;
  /** Set once every process of a pod being deleted or failed has stopped: the phase must be terminal. */
  stopped: boolean;
}

/** Pod phases the node writes. */
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/** The pod IP and host IP on the local node: containers share the host's network. */
export const localNodeIp = '127.0.0.1';

/** Condition types the kubelet owns; every other condition (PodScheduled, DisruptionTarget) is kept. */
const kubeletConditions = new Set(['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready']);

const succeeded = (state: ContainerState): boolean => state.kind === 'terminated' && state.exitCode === 0;

/**
 * The phase under `restartPolicy: Never`, first match wins: deadline → Failed; a failed init container →
 * Failed; init containers still pending → Pending; an app container waiting → Pending; one running →
 * Running; all stopped → Succeeded when every exit code is 0, else Failed. A stopped pod whose phase
 * would still be Pending or Running (deleted before it finished) is Failed, as the kubelet forces.
 */
export function podPhase(runtime: PodRuntime): PodPhase {
  const phase = ((): PodPhase => {
    if (runtime.deadlineExceeded) return 'Failed';
    if (runtime.init.some((state) => state.kind === 'terminated' && state.exitCode !== 0)) return 'Failed';
    if (!runtime.init.every(succeeded)) return 'Pending';
    if (runtime.app.some((state) => state.kind === 'waiting')) return 'Pending';
    if (runtime.app.some((state) => state.kind === 'running')) return 'Running';
    return runtime.app.every(succeeded) ? 'Succeeded' : 'Failed';
  })();
  if (runtime.stopped && (phase === 'Pending' || phase === 'Running')) return 'Failed';
  return phase;
}

/** Terminal phases: the kubelet never writes another phase after these. */
export function isTerminalPhase(phase: string | undefined): phase is 'Succeeded' | 'Failed' {
  return phase === 'Succeeded' || phase === 'Failed';
}

function containerStatus(name: string, image: string, state: ContainerState): V1ContainerStatus {
  const base = { name, image, imageID: state.imageId ?? '', restartCount: 0 };
  switch (state.kind) {
    case 'waiting':
      return {
        ...base,
        ready: false,
        started: false,
        state: { waiting: { reason: state.reason, ...(state.message ? { message: state.message } : {}) } },
      };
    case 'running':
      return {
        ...base,
        containerID: state.containerId,
        ready: true,
        started: true,
        state: { running: { startedAt: state.startedAt } },
      };
    case 'terminated':
      return {
        ...base,
        ...(state.containerId ? { containerID: state.containerId } : {}),
        ready: false,
        started: false,
        state: {
          terminated: {
            exitCode: state.exitCode,
            reason: state.reason,
            ...(state.message ? { message: state.message } : {}),
            ...(state.startedAt ? { startedAt: state.startedAt } : {}),
            finishedAt: state.finishedAt,
            ...(state.containerId ? { containerID: state.containerId } : {}),
          },
        },
      };
  }
}

type ConditionDraft = { type: string; status: 'True' | 'False'; reason?: string; message?: string };

function kubeletConditionDrafts(pod: V1Pod, runtime: PodRuntime, phase: PodPhase): ConditionDraft[] {
  const initNames = (pod.spec?.initContainers ?? []).map((container) => container.name);
  const appNames = (pod.spec?.containers ?? []).map((container) => container.name);
  const incompleteInit = initNames.filter((_, index) => {
    const state = runtime.init[index];
    return state === undefined || !succeeded(state);
  });
  const initialized: ConditionDraft =
    incompleteInit.length === 0
      ? { type: 'Initialized', status: 'True' }
      : {
          type: 'Initialized',
          status: 'False',
          reason: 'ContainersNotInitialized',
          message: `containers with incomplete status: [${incompleteInit.join(' ')}]`,
        };
  const unready = appNames.filter((_, index) => runtime.app[index]?.kind !== 'running');
  const readiness = (type: string): ConditionDraft => {
    if (phase === 'Succeeded') return { type, status: 'False', reason: 'PodCompleted' };
    if (phase === 'Failed') return { type, status: 'False', reason: 'PodFailed' };
    if (unready.length === 0) return { type, status: 'True' };
    return {
      type,
      status: 'False',
      reason: 'ContainersNotReady',
      message: `containers with unready status: [${unready.join(' ')}]`,
    };
  };
  return [
    {
      type: 'PodReadyToStartContainers',
      status: runtime.sandboxReady && !runtime.stopped && !isTerminalPhase(phase) ? 'True' : 'False',
    },
    initialized,
    readiness('ContainersReady'),
    readiness('Ready'),
  ];
}

/**
 * The full status to write through `/status`: the old status's fields the kubelet does not own (qosClass,
 * conditions such as PodScheduled and DisruptionTarget) are kept; a condition keeps its
 * `lastTransitionTime` while its status does not change. `now` stamps new transitions.
 */
export function podStatus(pod: V1Pod, runtime: PodRuntime, now: Date): V1PodStatus {
  const old = pod.status ?? {};
  const phase = podPhase(runtime);
  const oldConditions = old.conditions ?? [];
  const conditions: V1PodCondition[] = oldConditions.filter(
    (condition) => !kubeletConditions.has(condition.type),
  );
  for (const draft of kubeletConditionDrafts(pod, runtime, phase)) {
    const previous = oldConditions.find((condition) => condition.type === draft.type);
    conditions.push({
      ...draft,
      lastTransitionTime:
        previous?.status === draft.status && previous.lastTransitionTime ? previous.lastTransitionTime : now,
    });
  }
  const statuses = (
    specs: { name: string; image?: string }[] | undefined,
    states: ContainerState[],
  ): V1ContainerStatus[] =>
    (specs ?? []).map((spec, index) =>
      containerStatus(
        spec.name,
        spec.image ?? '',
        states[index] ?? { kind: 'waiting', reason: 'PodInitializing' },
      ),
    );
  const initContainers = pod.spec?.initContainers ?? [];
  return {
    ...old,
    phase,
    conditions,
    hostIP: localNodeIp,
    hostIPs: [{ ip: localNodeIp }],
    podIP: localNodeIp,
    podIPs: [{ ip: localNodeIp }],
    startTime: old.startTime ?? runtime.startTime,
    ...(runtime.deadlineExceeded
      ? {
          reason: 'DeadlineExceeded',
          message: 'Pod was active on the node longer than the specified deadline',
        }
      : {}),
    ...(initContainers.length > 0 ? { initContainerStatuses: statuses(initContainers, runtime.init) } : {}),
    containerStatuses: statuses(pod.spec?.containers, runtime.app),
  };
}

/**
 * The runtime of a pod this node finds already started when it (re)starts: its processes are gone with
 * the old node process. Like a kubelet whose container runtime lost the containers, every container that
 * had started becomes `terminated{137, ContainerStatusUnknown}` and the pod is stopped (so Failed, unless
 * every container had already succeeded). Returns undefined for a pod that never started a container: the
 * node simply runs it.
 */
export function lostRuntime(pod: V1Pod, now: Date): PodRuntime | undefined {
  const status = pod.status ?? {};
  const started = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].some(
    (container) => container.state?.running !== undefined || container.state?.terminated !== undefined,
  );
  if (!started) return undefined;
  const lost = (container: V1ContainerStatus | undefined): ContainerState => {
    const terminated = container?.state?.terminated;
    if (terminated)
      return {
        kind: 'terminated',
        exitCode: terminated.exitCode,
        reason: terminated.exitCode === 0 ? 'Completed' : 'Error',
        ...(terminated.message ? { message: terminated.message } : {}),
        ...(terminated.startedAt ? { startedAt: new Date(terminated.startedAt) } : {}),
        finishedAt: new Date(terminated.finishedAt ?? now),
        ...(terminated.containerID ? { containerId: terminated.containerID } : {}),
        ...(container?.imageID ? { imageId: container.imageID } : {}),
      };
    if (container?.state?.running)
      return {
        kind: 'terminated',
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was terminated',
        finishedAt: now,
      };
    return { kind: 'waiting', reason: 'PodInitializing' };
  };
  const byName = (list: V1ContainerStatus[] | undefined, name: string) =>
    list?.find((container) => container.name === name);
  return {
    startTime: new Date(status.startTime ?? now),
    sandboxReady: false,
    init: (pod.spec?.initContainers ?? []).map((c) => lost(byName(status.initContainerStatuses, c.name))),
    app: (pod.spec?.containers ?? []).map((c) => lost(byName(status.containerStatuses, c.name))),
    deadlineExceeded: false,
    stopped: true,
  };
}
