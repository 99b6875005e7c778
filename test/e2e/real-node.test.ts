import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyObjects,
  type E2eRun,
  eventsOf,
  jobsOf,
  machine,
  podsOfJob,
  RESOURCE,
  startE2eRun,
  waitFor,
  waitObject,
  waitReady,
} from './harness.ts';

// Job pods on a real node (src/local/real-node/): the kubelet of the control plane's release with
// containerd, runc and a CNI bridge, pulling the project's OCI images from crane's registry as
// `captf.local/*`. What the stand-in node only imitated is read here from the kubelet itself: its pod
// statuses, its Events, its image IDs, `kubectl logs` through its API, a registry's pull failure.

const MINUTE = 60_000;
let run: E2eRun;

beforeAll(async () => {
  run = await startE2eRun('real-node');
}, 3 * MINUTE);

afterAll(async () => {
  await run?.close();
}, 2 * MINUTE);

/** A core/v1 container status, as far as these tests read it. */
interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  state: {
    waiting?: { reason: string; message?: string };
    terminated?: { reason: string; exitCode: number; message?: string };
  };
}

/** The parts of a Job pod these tests read. */
interface ObservedPod {
  metadata: { name: string };
  spec: {
    nodeName: string;
    securityContext: Record<string, unknown>;
    containers: { name: string; securityContext: Record<string, unknown> }[];
  };
  status: { phase: string; initContainerStatuses?: ContainerStatus[]; containerStatuses?: ContainerStatus[] };
}

async function readPod(name: string): Promise<ObservedPod> {
  return JSON.parse(
    await run.kubectl.run(['get', 'pod', name, '-n', run.namespace, '-o', 'json']),
  ) as ObservedPod;
}

/** The Events the kubelet wrote about a pod: `reason: message`, oldest first. */
async function kubeletEvents(pod: string): Promise<string[]> {
  const events = (await eventsOf(run, pod)) as unknown as {
    reason: string;
    message: string;
    source?: { component?: string };
    reportingComponent?: string;
  }[];
  return events
    .filter((event) => (event.source?.component ?? event.reportingComponent) === 'kubelet')
    .map((event) => `${event.reason}: ${event.message}`);
}

describe('Job pods on the real kubelet, containerd and runc', () => {
  it(
    'a TerraformMachine goes Ready through tofu in a restricted pod; the kubelet pulled, ran and reported it',
    async () => {
      await applyObjects(run, [machine(run, 'real', {})]);
      const ready = await waitReady(run, RESOURCE.TerraformMachine, 'real', 3 * MINUTE);
      expect(ready.spec.providerID).toBeTruthy();
      expect(ready.status?.lastRun).toMatchObject({ op: 'apply', result: 'succeeded' });

      const [job] = await jobsOf(run, 'real');
      const [podName] = await podsOfJob(run, job ?? '');
      const pod = await readPod(podName ?? '');
      expect(pod.spec.nodeName).toBe(run.nodeName);
      expect(pod.status.phase).toBe('Succeeded');
      expect(pod.spec.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      for (const container of pod.spec.containers)
        expect(container.securityContext).toMatchObject({
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });

      // Image IDs are the registry's manifest digests, and the controller pinned the module's.
      const digests = run.controller.realNode?.digests ?? {};
      const runner = pod.status.initContainerStatuses?.find((status) => status.name === 'runner');
      const source = pod.status.containerStatuses?.find((status) => status.name === 'source');
      expect(runner?.imageID).toBe(`captf.local/runner@${digests.runner}`);
      expect(runner?.state.terminated).toMatchObject({ reason: 'Completed', exitCode: 0 });
      expect(source?.imageID).toBe(`captf.local/sample-machine@${digests['sample-machine']}`);
      expect(ready.status?.source?.pinnedImage).toBe(
        `captf.local/sample-machine@${digests['sample-machine']}`,
      );

      // The runner's result document is the kubelet's termination message (the bookkeeping read it).
      expect(source?.state.terminated).toMatchObject({ reason: 'Completed', exitCode: 0 });
      expect(JSON.parse(source?.state.terminated?.message ?? '{}')).toMatchObject({ op: 'apply' });

      const events = await kubeletEvents(podName ?? '');
      expect(events).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Pulled: Successfully pulled image "captf\.local\/runner:dev"/),
          expect.stringMatching(/^Pulled: Successfully pulled image "captf\.local\/sample-machine:1"/),
          expect.stringMatching(/^Started: /),
        ]),
      );

      // `kubectl logs` goes through the API server to the kubelet's API.
      const logs = await run.kubectl.run(['logs', podName ?? '', '-n', run.namespace, '-c', 'source']);
      expect(logs).toContain('apply');
    },
    5 * MINUTE,
  );

  it(
    'an image the registry does not have is ErrImagePull then ImagePullBackOff, classified by the controller',
    async () => {
      await applyObjects(run, [
        machine(run, 'pull', {
          image: 'captf.local/no-such-module:1',
          jobs: { activeDeadlineSeconds: 60, lockTimeoutSeconds: 5 },
        }),
      ]);
      const waiting = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'pull',
        'waitReason ImagePullBackOff',
        (o) => o.status?.waitReason === 'ImagePullBackOff',
        2 * MINUTE,
      );
      expect(waiting.status?.activeJob?.op).toBe('apply');
      const [job] = await jobsOf(run, 'pull');
      const [podName] = await podsOfJob(run, job ?? '');
      const events = await waitFor(
        'the kubelet reporting the pull failure and its back-off',
        () => kubeletEvents(podName ?? ''),
        (list) => list.some((line) => line.startsWith('BackOff: ')),
        MINUTE,
      );
      expect(events).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            /^Failed: Failed to pull image "captf\.local\/no-such-module:1": .*not found/,
          ),
          expect.stringMatching(/^Failed: Error: ErrImagePull/),
          expect.stringMatching(/^BackOff: Back-off pulling image "captf\.local\/no-such-module:1"/),
        ]),
      );
      const source = (await readPod(podName ?? '')).status.containerStatuses?.find(
        (status) => status.name === 'source',
      );
      expect(['ErrImagePull', 'ImagePullBackOff']).toContain(source?.state.waiting?.reason);
      // What an operator reads with `kubectl describe pod`: the waiting container and the kubelet's Events.
      const described = await run.kubectl.run(['describe', 'pod', podName ?? '', '-n', run.namespace]);
      expect(described).toMatch(/State:\s+Waiting\s+Reason:\s+(ErrImagePull|ImagePullBackOff)/);
      // kubectl shows each Event's message after its field path (`spec.containers{source}: …`).
      expect(described).toMatch(
        /Warning\s+Failed\s+.*kubelet\s+.*Failed to pull image "captf\.local\/no-such-module:1"/,
      );
      expect(described).toMatch(
        /BackOff\s+.*kubelet\s+.*Back-off pulling image "captf\.local\/no-such-module:1"/,
      );
    },
    4 * MINUTE,
  );

  it(
    'a runner over its memory limit is OOMKilled by the kernel, as the kubelet reports, and classified as such',
    async () => {
      await applyObjects(run, [
        machine(run, 'oom', {
          jobs: {
            resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '32Mi' } },
            lockTimeoutSeconds: 5,
          },
        }),
      ]);
      const failed = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'oom',
        'the run recorded as failed',
        (o) => o.status?.lastRun?.result === 'failed',
        3 * MINUTE,
      );
      expect(failed.status?.lastRun?.error?.summary).toContain('OOM-killed');
      const [job] = await jobsOf(run, 'oom');
      const [podName] = await podsOfJob(run, job ?? '');
      const source = (await readPod(podName ?? '')).status.containerStatuses?.find(
        (status) => status.name === 'source',
      );
      expect(source?.state.terminated?.reason).toBe('OOMKilled');
    },
    4 * MINUTE,
  );
});
