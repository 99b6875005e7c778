/**
 * The minimal shapes of Kubernetes objects the core reads. They match the API's JSON and the objects of
 * @kubernetes/client-node alike (timestamps may be strings or Dates), so the shell passes what it read.
 */

/** A metav1.Time as JSON text or as a Date (client-node deserialises to Date). */
export type Timestamp = string | Date;

export interface MetaView {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: {
    kind: string;
    name: string;
    uid: string;
    apiVersion?: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
  }[];
  creationTimestamp?: Timestamp;
  deletionTimestamp?: Timestamp;
}

export interface JobConditionView {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: Timestamp;
}

/** batch/v1 Job, as far as the core reads it. */
export interface JobView {
  metadata: MetaView;
  spec?: {
    activeDeadlineSeconds?: number;
    template?: { spec?: { containers?: { name: string; image?: string }[] } };
  };
  status?: {
    conditions?: JobConditionView[];
    active?: number;
    succeeded?: number;
    failed?: number;
    startTime?: Timestamp;
    completionTime?: Timestamp;
  };
}

export interface ContainerStateView {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: Timestamp };
  terminated?: {
    exitCode: number;
    reason?: string;
    message?: string;
    /**
     * Absent or `null` when the container never started: a real kubelet reports a container it never
     * started, in a pod killed first, as `ContainerStatusUnknown` with `startedAt: null`.
     */
    startedAt?: Timestamp | null;
    finishedAt?: Timestamp | null;
  };
}

export interface ContainerStatusView {
  name: string;
  state?: ContainerStateView;
  /** The previous run's state, once the container restarted. */
  lastState?: ContainerStateView;
  /** The kubelet's startup verdict: true once the container started and passed its startup probe. */
  started?: boolean;
  restartCount?: number;
  /** The image the kubelet was asked for (the pod spec's reference), also while it cannot pull it. */
  image?: string;
  /** The image the container runs, as a digest reference (`repo@sha256:…`), once it was pulled. */
  imageID?: string;
}

/** core/v1 Pod, as far as the core reads it. */
export interface PodView {
  metadata: MetaView;
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    reason?: string;
    conditions?: { type: string; status: string; reason?: string }[];
    containerStatuses?: ContainerStatusView[];
    initContainerStatuses?: ContainerStatusView[];
  };
}

/** Milliseconds since the epoch of a timestamp; undefined when absent or unreadable. */
export function timestampMs(value: Timestamp | null | undefined): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}
