import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchV1Api,
  type CoreV1Api,
  type KubeConfig,
  type V1Container,
  type V1Job,
  type V1Pod,
  type V1PodSpec,
  Watch,
} from '@kubernetes/client-node';

/** Test support for the local-node tests: object builders and waits on the real API server. */

/** Polls `read` every 200 ms until `done` holds; throws with `what` and the last value after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)?.slice(0, 2000)}`);
    await sleep(200);
  }
}

/** A test container on the `testbox` image; `command` runs as given (paths rewritten by the node). */
export function container(name: string, command: string[], extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'captf.local/testbox:test', command, ...extra };
}

/** A pod spec like a Job's: `restartPolicy: Never`, no service-account token (see the README's gotchas). */
export function podSpec(spec: Partial<V1PodSpec> & Pick<V1PodSpec, 'containers'>): V1PodSpec {
  return {
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 5,
    ...spec,
  };
}

/** A Job with `backoffLimit: 0` (DESIGN.md section 9) around `spec`. */
export function job(name: string, spec: V1PodSpec, activeDeadlineSeconds?: number): V1Job {
  return {
    metadata: { name },
    spec: {
      backoffLimit: 0,
      ...(activeDeadlineSeconds ? { activeDeadlineSeconds } : {}),
      template: { spec },
    },
  };
}

/** Creates `body` in `namespace` and returns its one pod once the Job controller made it. */
export async function createJob(
  config: KubeConfig,
  core: CoreV1Api,
  namespace: string,
  body: V1Job,
): Promise<V1Pod> {
  await config.makeApiClient(BatchV1Api).createNamespacedJob({ namespace, body });
  const name = body.metadata?.name ?? '';
  const pods = await eventually(
    `a pod of Job ${name}`,
    () => core.listNamespacedPod({ namespace, labelSelector: `job-name=${name}` }),
    (list) => list.items.length > 0,
  );
  const [pod] = pods.items;
  if (!pod) throw new Error(`no pod for Job ${name}`);
  return pod;
}

/** Reads pod `name` until `done` holds. */
export function podUntil(
  core: CoreV1Api,
  namespace: string,
  name: string,
  what: string,
  done: (pod: V1Pod) => boolean,
  timeoutMs?: number,
): Promise<V1Pod> {
  return eventually(what, () => core.readNamespacedPod({ namespace, name }), done, timeoutMs);
}

/** Reads Job `name` until it has a condition of `type` with status True; returns that condition. */
export async function jobCondition(
  config: KubeConfig,
  namespace: string,
  name: string,
  type: 'Complete' | 'Failed',
) {
  const batch = config.makeApiClient(BatchV1Api);
  const job = await eventually(
    `Job ${name} ${type}`,
    () => batch.readNamespacedJob({ namespace, name }),
    (found) => (found.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True'),
  );
  return job.status?.conditions?.find((c) => c.type === type);
}

/** Every version of the pods of `namespace` seen by a watch, in order, including the final DELETED one. */
export async function recordPods(config: KubeConfig, namespace: string) {
  const seen: { type: string; pod: V1Pod }[] = [];
  const controller = await new Watch(config).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (type: string, pod: V1Pod) => seen.push({ type, pod }),
    () => undefined,
  );
  return {
    seen,
    of: (name: string) => seen.filter((entry) => entry.pod.metadata?.name === name),
    stop: () => controller.abort(),
  };
}
