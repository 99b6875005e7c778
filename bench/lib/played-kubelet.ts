import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import type { BatchV1Api, CoreV1Api, V1Job, V1Pod } from '@kubernetes/client-node';
import { ANNOTATIONS } from '../../src/core/job-labels.ts';
import type { RunnerResult } from '../../src/schemas/result.ts';

/**
 * A kubelet played by a bench on a stack without a node (the part of test/integration/step/harness.ts a
 * bench needs): the Job controller creates a Job's pod, which stays Pending; the bench writes the pod's end
 * through the `/status` subresource, plays OpenTofu's kubernetes backend (the state Secret a successful
 * apply leaves), and the real Job controller then completes the Job.
 */

/** The played node's API clients and the images its pod statuses name. */
export interface PlayedKubelet {
  core: CoreV1Api;
  batch: BatchV1Api;
  namespace: string;
  runnerImage: string;
  moduleImage: string;
}

/** A successful apply's runner result document (src/schemas/result.ts). */
export const APPLY_SUCCEEDED: RunnerResult = {
  version: 1,
  op: 'apply',
  result: 'succeeded',
  steps: [{ name: 'init', exit: 0, seconds: 1.5 }],
};

/** Polls `read` every 150 ms until `done` holds; throws after `timeoutMs` naming `what`. */
async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`wait for ${what}: timed out after ${timeoutMs} ms`);
    await sleep(150);
    value = await read();
  }
  return value;
}

/**
 * Ends the Job's pod as a successful apply (`source` exits 0 with `APPLY_SUCCEEDED` as its termination
 * message, the state Secret holds one resource) and waits until the Job controller marks the Job Complete.
 * Throws when the pod or the Job's end does not come within a minute.
 */
export async function finishJobSucceeded(node: PlayedKubelet, job: string): Promise<void> {
  const { core, batch, namespace } = node;
  const pods = await eventually(
    () => core.listNamespacedPod({ namespace, labelSelector: `job-name=${job}` }),
    (list) => list.items.length > 0,
    60_000,
    `pod of ${job}`,
  );
  const pod = pods.items[0] as V1Pod;
  const read = await batch.readNamespacedJob({ namespace, name: job });
  const suffix = read.metadata?.annotations?.[ANNOTATIONS.stateSuffix];
  if (suffix) await writeState(node, suffix);
  const now = new Date();
  const base = { imageID: '', ready: false, restartCount: 0 };
  await writePodStatus(node, pod.metadata?.name ?? '', {
    phase: 'Succeeded',
    startTime: now,
    initContainerStatuses: [
      {
        ...base,
        name: 'runner',
        image: node.runnerImage,
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now } },
      },
    ],
    containerStatuses: [
      {
        ...base,
        name: 'source',
        image: node.moduleImage,
        state: {
          terminated: {
            exitCode: 0,
            reason: 'Completed',
            message: JSON.stringify(APPLY_SUCCEEDED),
            startedAt: now,
            finishedAt: now,
          },
        },
      },
    ],
  });
  await eventually(
    () => batch.readNamespacedJob({ namespace, name: job }),
    (j: V1Job) => j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') === true,
    60_000,
    `Job ${job} Complete`,
  );
}

async function writePodStatus(node: PlayedKubelet, name: string, status: V1Pod['status']): Promise<void> {
  const { core, namespace } = node;
  for (let tries = 0; tries < 5; tries += 1) {
    const fresh = await core.readNamespacedPod({ namespace, name });
    try {
      await core.replaceNamespacedPodStatus({ namespace, name, body: { ...fresh, status } });
      return;
    } catch (error) {
      if (!String(error).includes('409')) throw error;
    }
  }
  throw new Error(`write status of pod ${name}: conflicts`);
}

/** The state Secret an apply leaves through OpenTofu's kubernetes backend: one managed resource. */
async function writeState(node: PlayedKubelet, suffix: string): Promise<void> {
  const { core, namespace } = node;
  const name = `tfstate-default-${suffix}`;
  const state = gzipSync(
    JSON.stringify({
      version: 4,
      serial: 1,
      lineage: 'bench',
      resources: [
        { mode: 'managed', type: 'terraform_data', name: 'this', instances: [{ attributes: { id: 'x' } }] },
      ],
    }),
  );
  const data = { tfstate: state.toString('base64') };
  const existing = await core.readNamespacedSecret({ namespace, name }).catch(() => undefined);
  if (existing) await core.replaceNamespacedSecret({ namespace, name, body: { ...existing, data } });
  else await core.createNamespacedSecret({ namespace, body: { metadata: { name }, data } });
}
