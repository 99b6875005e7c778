import {
  ApiException,
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  type V1Pod,
  type V1PodStatus,
} from '@kubernetes/client-node';
import type { VolumeSourceReader } from './pod-volumes.ts';

/**
 * The local node's calls to the API server for pods: reads for volumes and env, status writes through
 * `/status`, the final delete, and kubelet Events. One place maps HTTP answers to values.
 */

/** The HTTP status of a failed API call; undefined for transport errors. */
export function httpStatusOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

const decode = (data: Record<string, string> | undefined, base64: boolean): Record<string, Buffer> =>
  Object.fromEntries(
    Object.entries(data ?? {}).map(([key, value]) => [key, Buffer.from(value, base64 ? 'base64' : 'utf8')]),
  );

/** Outcome of a status write. */
export type StatusWrite = 'written' | 'pod-gone' | 'unchanged-terminal';

/** The pod-facing API of the local node. */
export interface NodeApi extends VolumeSourceReader {
  readPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  /**
   * Writes the status computed from the live pod (read, compute, replace; re-read on 409). Answers
   * `pod-gone` when the pod or its UID changed (a new pod with the same name is not ours to write).
   */
  writeStatus(pod: V1Pod, compute: (live: V1Pod) => V1PodStatus): Promise<StatusWrite>;
  /** Deletes the pod object at once (grace 0, UID precondition), as the kubelet does once it stopped. */
  deletePod(pod: V1Pod): Promise<void>;
  /**
   * Records a kubelet Event on the pod, or on its container at `fieldPath` (`spec.containers{name}`). An
   * Event that repeats one already recorded bumps that one's `count` and `lastTimestamp` instead of
   * making another (client-go's EventCorrelator, which the kubelet's recorder uses). Failures are
   * swallowed: events are best effort in the kubelet too.
   */
  recordEvent(
    pod: V1Pod,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    fieldPath?: string,
  ): Promise<void>;
}

/** How many distinct Events the node remembers for aggregation (client-go's `maxLruCacheEntries`). */
const eventCacheSize = 4096;

/** Builds the API access of node `nodeName` from a kubeconfig. */
export function nodeApi(config: KubeConfig, nodeName: string): NodeApi {
  const core = config.makeApiClient(CoreV1Api);
  const ignoreNotFound = async <T>(call: Promise<T>): Promise<T | undefined> => {
    try {
      return await call;
    } catch (error) {
      if (httpStatusOf(error) === 404) return undefined;
      throw error;
    }
  };
  // Last recorded version of each distinct Event, newest use last; a repeat waits for the one before it.
  const recorded = new Map<string, Promise<CoreV1Event | undefined>>();
  let sequence = 0n;
  return {
    readPod: (namespace, name) => ignoreNotFound(core.readNamespacedPod({ namespace, name })),
    readSecret: async (namespace, name) => {
      const secret = await ignoreNotFound(core.readNamespacedSecret({ namespace, name }));
      return secret ? decode(secret.data, true) : undefined;
    },
    readConfigMap: async (namespace, name) => {
      const configMap = await ignoreNotFound(core.readNamespacedConfigMap({ namespace, name }));
      if (!configMap) return undefined;
      return { ...decode(configMap.data, false), ...decode(configMap.binaryData, true) };
    },
    requestToken: async (pod, audience, expirationSeconds) => {
      const answer = await ignoreNotFound(
        core.createNamespacedServiceAccountToken({
          namespace: pod.metadata?.namespace ?? '',
          name: pod.spec?.serviceAccountName ?? 'default',
          body: {
            spec: {
              audiences: audience ? [audience] : [],
              expirationSeconds,
              boundObjectRef: {
                apiVersion: 'v1',
                kind: 'Pod',
                name: pod.metadata?.name,
                uid: pod.metadata?.uid,
              },
            },
          },
        }),
      );
      return answer?.status?.token;
    },
    writeStatus: async (pod, compute) => {
      const namespace = pod.metadata?.namespace ?? '';
      const name = pod.metadata?.name ?? '';
      for (let attempt = 1; ; attempt++) {
        const live = await ignoreNotFound(core.readNamespacedPod({ namespace, name }));
        if (!live || live.metadata?.uid !== pod.metadata?.uid) return 'pod-gone';
        const status = compute(live);
        try {
          await core.replaceNamespacedPodStatus({ namespace, name, body: { ...live, status } });
          return 'written';
        } catch (error) {
          const code = httpStatusOf(error);
          if (code === 404) return 'pod-gone';
          // 409: someone else wrote the pod in between (a condition such as DisruptionTarget); re-read.
          if (code === 409 && attempt < 10) continue;
          // 422 on a terminal pod: the API server refuses a phase change after Succeeded/Failed.
          if (code === 422 && (live.status?.phase === 'Succeeded' || live.status?.phase === 'Failed'))
            return 'unchanged-terminal';
          throw error;
        }
      }
    },
    deletePod: async (pod) => {
      try {
        await core.deleteNamespacedPod({
          namespace: pod.metadata?.namespace ?? '',
          name: pod.metadata?.name ?? '',
          gracePeriodSeconds: 0,
          body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid } },
        });
      } catch (error) {
        // Gone already, or the name now belongs to a newer pod (UID precondition): nothing of ours left.
        const code = httpStatusOf(error);
        if (code !== 404 && code !== 409) throw error;
      }
    },
    recordEvent: (pod, type, reason, message, fieldPath) => {
      const namespace = pod.metadata?.namespace ?? 'default';
      const key = [pod.metadata?.uid, fieldPath, type, reason, message].join('\0');
      const before = recorded.get(key);
      // The kubelet's recorder names an Event `<pod>.<hex UnixNano>`: names then sort by time, and so do
      // the Events of one second in `kubectl describe` (it sorts by lastTimestamp, whole seconds).
      const eventName = `${pod.metadata?.name ?? 'pod'}.${(BigInt(Date.now()) * 1_000_000n + (sequence++ % 1_000_000n)).toString(16)}`;
      const create = (now: Date): Promise<CoreV1Event> =>
        core.createNamespacedEvent({
          namespace,
          body: {
            metadata: { name: eventName, namespace },
            involvedObject: {
              apiVersion: 'v1',
              kind: 'Pod',
              name: pod.metadata?.name,
              namespace,
              uid: pod.metadata?.uid,
              ...(fieldPath ? { fieldPath } : {}),
            },
            type,
            reason,
            message,
            source: { component: 'kubelet', host: nodeName },
            reportingComponent: 'kubelet',
            reportingInstance: nodeName,
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
          },
        });
      const next = (async (): Promise<CoreV1Event | undefined> => {
        const prior = await before;
        const now = new Date();
        if (!prior?.metadata?.name) return create(now).catch(() => undefined);
        try {
          // Events allow unconditional updates: no resourceVersion, so two repeats never conflict.
          return await core.replaceNamespacedEvent({
            namespace,
            name: prior.metadata.name,
            body: {
              ...prior,
              metadata: { ...prior.metadata, resourceVersion: undefined },
              count: (prior.count ?? 1) + 1,
              lastTimestamp: now,
            },
          });
        } catch (error) {
          // Expired (the API server's event TTL) or deleted: start a new one, as the correlator would.
          if (httpStatusOf(error) === 404) return create(now).catch(() => undefined);
          return prior;
        }
      })();
      recorded.delete(key);
      recorded.set(key, next);
      if (recorded.size > eventCacheSize) recorded.delete(recorded.keys().next().value ?? '');
      return next.then(() => undefined);
    },
  };
}
