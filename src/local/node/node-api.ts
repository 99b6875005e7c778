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
  /** Records a kubelet Event on the pod; failures are swallowed (events are best effort in the kubelet too). */
  recordEvent(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

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
    recordEvent: async (pod, type, reason, message) => {
      const now = new Date();
      const namespace = pod.metadata?.namespace ?? 'default';
      const event: CoreV1Event = {
        metadata: { generateName: `${pod.metadata?.name ?? 'pod'}.`, namespace },
        involvedObject: {
          apiVersion: 'v1',
          kind: 'Pod',
          name: pod.metadata?.name,
          namespace,
          uid: pod.metadata?.uid,
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
      };
      await core.createNamespacedEvent({ namespace, body: event }).catch(() => undefined);
    },
  };
}
