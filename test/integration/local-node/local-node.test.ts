import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoordinationV1Api, CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEDICATED_TAINT_KEY, dedicatedToleration } from '../../../src/local/dedicated-node.ts';
import { pullLocalImage } from '../../../src/local/node/image-store.ts';
import { type LocalNode, startLocalNode } from '../../../src/local/node/local-node.ts';
import { httpStatusOf } from '../../../src/local/node/node-api.ts';
import { parseRunnerResult } from '../../../src/schemas/result.ts';
import { testStack } from '../../env/index.ts';
import {
  container,
  createJob,
  eventually,
  job,
  jobCondition,
  podSpec,
  podUntil,
  recordPods,
} from './cluster.ts';

// The local node against the real control plane: the real kube-scheduler binds pods to it, the real Job
// controller turns the pod statuses it writes into Job conditions. Own namespace; the Node is removed in
// afterAll, because other tests expect a cluster without nodes.

const suffix = randomBytes(3).toString('hex');
const namespace = `local-node-${suffix}`;
const nodeName = `captf-local-node-${suffix}`;
const imageDirs = [
  join(import.meta.dirname, '../../fixtures/images'),
  join(import.meta.dirname, '../../../infra/local/images'),
];
// Empty at first: C09's recovering pull finds its image here only once the test copies it in.
const lateImages = mkdtempSync(join(tmpdir(), 'captf-late-images-'));
const config = new KubeConfig();
let core: CoreV1Api;
let node: LocalNode;
const nodeLog: string[] = [];

function startNode(): Promise<LocalNode> {
  return startLocalNode({
    kubeConfig: config,
    nodeName,
    imageDirs: [...imageDirs, lateImages],
    tools: { tofu: testStack().tofuPath },
    // Scaled-down kubelet back-off so C09's alternation shows within seconds.
    pullBackoff: { initialBackoffMs: 2000, maxBackoffMs: 8000, errImagePullMs: 1000 },
    unregisterOnStop: true,
    log: (line) => nodeLog.push(line),
  });
}

const sourceState = (pod: V1Pod) => pod.status?.containerStatuses?.[0]?.state;
const terminated = (pod: V1Pod) => sourceState(pod)?.terminated;

beforeAll(async () => {
  config.loadFromFile(testStack().kubeconfigPath);
  core = config.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  node = await startNode();
});

afterAll(async () => {
  // Namespace first, while the node still runs: it ends and deletes its pods like a kubelet, so no pod is
  // left bound to a Node that no longer exists.
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
  await eventually(
    'the namespace to be empty of pods',
    () => core.listNamespacedPod({ namespace }),
    (list) => list.items.length === 0,
    60_000,
  ).catch(() => undefined);
  await node?.stop();
  // Belt and braces: the Node must be gone even if stop() failed half-way (smoke tests expect no nodes).
  await core?.deleteNode({ name: nodeName }).catch((error: unknown) => {
    if (httpStatusOf(error) !== 404) throw error;
  });
  rmSync(lateImages, { recursive: true, force: true });
});

describe('node registration', () => {
  it('registers a Ready, untainted Node with capacity and renews its Lease in kube-node-lease', async () => {
    const registered = await core.readNode({ name: nodeName });
    expect(registered.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(registered.spec?.taints ?? []).toEqual([]);
    expect(registered.status?.allocatable).toMatchObject({ cpu: '2', memory: '8Gi', pods: '110' });
    const lease = await config
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: 'kube-node-lease', name: nodeName });
    expect(lease.spec?.holderIdentity).toBe(nodeName);
    const renewed = await eventually(
      'a lease renewal',
      () =>
        config
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace: 'kube-node-lease', name: nodeName }),
      (later) => String(later.spec?.renewTime) !== String(lease.spec?.renewTime),
      20_000,
    );
    expect(new Date(String(renewed.spec?.renewTime)).getTime()).toBeGreaterThan(
      new Date(String(lease.spec?.renewTime)).getTime(),
    );
  });
});

describe("a dedicated node (a test run's own node on the shared API server)", () => {
  it('carries captf.io/dedicated=<node>:NoSchedule: the scheduler binds a pod that tolerates it, not one that does not', async () => {
    const dedicatedName = `${nodeName}-dedicated`;
    const dedicated = await startLocalNode({
      kubeConfig: config,
      nodeName: dedicatedName,
      dedicated: true,
      imageDirs,
      unregisterOnStop: true,
      log: (line) => nodeLog.push(line),
    });
    try {
      const registered = await core.readNode({ name: dedicatedName });
      expect(registered.spec?.taints).toEqual([
        { key: DEDICATED_TAINT_KEY, value: dedicatedName, effect: 'NoSchedule' },
      ]);
      const pinned = { 'kubernetes.io/hostname': dedicatedName };
      const exitZero = [container('source', ['/captf/report.sh', '/dev/termination-log', 'ok', '0'])];
      const stray = await createJob(
        config,
        core,
        namespace,
        job('stray', podSpec({ nodeSelector: pinned, containers: exitZero })),
      );
      const tolerating = await createJob(
        config,
        core,
        namespace,
        job(
          'tolerating',
          podSpec({
            nodeSelector: pinned,
            tolerations: [dedicatedToleration(dedicatedName)],
            containers: exitZero,
          }),
        ),
      );
      const done = await podUntil(
        core,
        namespace,
        tolerating.metadata?.name ?? '',
        'the tolerating pod Succeeded',
        (p) => p.status?.phase === 'Succeeded',
      );
      expect(done.spec?.nodeName).toBe(dedicatedName);
      const refused = await podUntil(
        core,
        namespace,
        stray.metadata?.name ?? '',
        'the stray pod found unschedulable',
        (p) =>
          p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable') ??
          false,
      );
      expect(refused.spec?.nodeName).toBeUndefined();
      expect(refused.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message).toMatch(
        /untolerated taint/,
      );
    } finally {
      await config
        .makeApiClient(BatchV1Api)
        .deleteCollectionNamespacedJob({ namespace, propagationPolicy: 'Background' })
        .catch(() => undefined);
      await dedicated.stop();
    }
  });
});

describe('Jobs run on the local node', () => {
  it('exit 0: Pending -> Running -> Succeeded, Job Complete, termination message from the image script', async () => {
    const recorder = await recordPods(config, namespace);
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'exit-zero',
        podSpec({
          containers: [
            container('source', [
              '/bin/sh',
              '-c',
              'sleep 1.5; exec "$0" "$@"',
              '/captf/report.sh',
              '/dev/termination-log',
              'all good',
              '0',
            ]),
          ],
        }),
      ),
    );
    const condition = await jobCondition(config, namespace, 'exit-zero', 'Complete');
    expect(condition?.status).toBe('True');
    const done = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
    );
    recorder.stop();
    const phases = recorder.of(pod.metadata?.name ?? '').map((entry) => entry.pod.status?.phase);
    expect(phases).toContain('Pending');
    expect(phases).toContain('Running');
    expect(terminated(done)).toMatchObject({ exitCode: 0, reason: 'Completed', message: 'all good' });
    expect(terminated(done)?.startedAt).toBeDefined();
    expect(terminated(done)?.finishedAt).toBeDefined();
    expect(done.status?.podIP).toBe('127.0.0.1');
    expect(done.status?.hostIP).toBe('127.0.0.1');
    expect(done.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    expect(done.status?.containerStatuses?.[0]?.imageID).toMatch(
      /^captf\.local\/testbox@sha256:[0-9a-f]{64}$/,
    );
    const conditions = Object.fromEntries((done.status?.conditions ?? []).map((c) => [c.type, c]));
    expect(conditions.PodScheduled?.status).toBe('True');
    expect(conditions.Initialized?.status).toBe('True');
    expect(conditions.Ready).toMatchObject({ status: 'False', reason: 'PodCompleted' });
  });

  it('exit 1: container terminated{1, Error}, pod Failed, Job Failed', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'exit-one',
        podSpec({
          containers: [container('source', ['/captf/report.sh', '/dev/termination-log', 'it broke', '1'])],
        }),
      ),
    );
    const condition = await jobCondition(config, namespace, 'exit-one', 'Failed');
    expect(condition?.status).toBe('True');
    const failed = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'Failed',
      (p) => p.status?.phase === 'Failed',
    );
    expect(terminated(failed)).toMatchObject({ exitCode: 1, reason: 'Error', message: 'it broke' });
  });

  it('rewrites a --flag=/path argument, and keeps the last 4096 bytes of a longer termination message', async () => {
    // 5000 bytes: 904 'a' then 4096 bytes ending in 'END'; the kubelet reads the file's tail.
    const script =
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
      'p="${0#--result-file=}"; head -c 904 /dev/zero | tr "\\0" a > "$p"; head -c 4093 /dev/zero | tr "\\0" b >> "$p"; printf END >> "$p"';
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'long-message',
        podSpec({
          containers: [container('source', ['/bin/sh', '-c', script, '--result-file=/dev/termination-log'])],
        }),
      ),
    );
    const done = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
    );
    const message = terminated(done)?.message ?? '';
    expect(message).toHaveLength(4096);
    expect(message.startsWith('b')).toBe(true);
    expect(message.endsWith('END')).toBe(true);
  });

  it('an emptyDir written by an init container is read by the main container; init runs first', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'shared-dir',
        podSpec({
          volumes: [{ name: 'work', emptyDir: {} }],
          initContainers: [
            container('runner', ['/bin/sh', '-c', 'printf "from init" > "$0"', '/work/handoff'], {
              volumeMounts: [{ name: 'work', mountPath: '/work' }],
            }),
          ],
          containers: [
            container(
              'source',
              ['/bin/sh', '-c', 'cat "$0" > "$1"', '/captf/shared/handoff', '/dev/termination-log'],
              {
                volumeMounts: [{ name: 'work', mountPath: '/captf/shared' }],
              },
            ),
          ],
        }),
      ),
    );
    const done = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
    );
    expect(done.status?.initContainerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    expect(terminated(done)?.message).toBe('from init');
    const initFinished = new Date(
      String(done.status?.initContainerStatuses?.[0]?.state?.terminated?.finishedAt),
    );
    expect(new Date(String(terminated(done)?.startedAt)).getTime()).toBeGreaterThanOrEqual(
      initFinished.getTime(),
    );
  });

  it('a failing init container fails the pod and the main container never starts', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'init-fails',
        podSpec({
          initContainers: [container('runner', ['/bin/sh', '-c', 'exit 7'])],
          containers: [container('source', ['/bin/sh', '-c', 'exit 0'])],
        }),
      ),
    );
    const failed = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'Failed',
      (p) => p.status?.phase === 'Failed',
    );
    expect(failed.status?.initContainerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 7,
      reason: 'Error',
    });
    expect(sourceState(failed)?.waiting?.reason).toBe('PodInitializing');
    await jobCondition(config, namespace, 'init-fails', 'Failed');
  });

  it('a Secret volume is materialised read-only; env from value, secretKeyRef and configMapKeyRef', async () => {
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'run-config' },
        stringData: { 'config.json': '{"v":1}', token: 'env-secret' },
      },
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'settings' }, data: { mode: 'cm-value' } },
    });
    const recorder = await recordPods(config, namespace);
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'secret-volume',
        podSpec({
          volumes: [{ name: 'config', secret: { secretName: 'run-config' } }],
          containers: [
            container(
              'source',
              [
                '/bin/sh',
                '-c',
                'printf "%s|%s|%s|%s" "$(cat "$0")" "$LITERAL" "$FROM_SECRET" "$FROM_CM" > "$1"; sleep 30',
                '/captf/config/config.json',
                '/dev/termination-log',
              ],
              {
                volumeMounts: [{ name: 'config', mountPath: '/captf/config', readOnly: true }],
                env: [
                  { name: 'LITERAL', value: 'plain-$(FROM_NOWHERE)' },
                  { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'run-config', key: 'token' } } },
                  { name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode' } } },
                ],
              },
            ),
          ],
          terminationGracePeriodSeconds: 1,
        }),
      ),
    );
    const running = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'Running',
      (p) => p.status?.phase === 'Running',
    );
    const volumeDir = join(node.stateDir, 'pods', running.metadata?.uid ?? '', 'volumes', 'config');
    expect(statSync(volumeDir).mode & 0o777).toBe(0o555);
    expect(statSync(join(volumeDir, 'config.json')).mode & 0o777).toBe(0o444);
    expect(readFileSync(join(volumeDir, 'config.json'), 'utf8')).toBe('{"v":1}');
    const name = running.metadata?.name ?? '';
    await core.deleteNamespacedPod({ namespace, name });
    await eventually(
      'the pod object to disappear',
      () => core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` }),
      (list) => list.items.length === 0,
      30_000,
    );
    recorder.stop();
    const last = recorder.of(name).findLast((entry) => terminated(entry.pod) !== undefined);
    // An unknown $(VAR) stays as written (Kubernetes expansion rules).
    expect(terminated(last?.pod as V1Pod)?.message).toBe('{"v":1}|plain-$(FROM_NOWHERE)|env-secret|cm-value');
  });
});

describe('the per-run Secret arrives after its Job (DESIGN.md section 5 step 8)', () => {
  it('the pod waits in ContainerCreating with a FailedMount event, then runs once the Secret exists', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'secret-later',
        podSpec({
          volumes: [{ name: 'config', secret: { secretName: 'captf-run-secret-later', defaultMode: 0o400 } }],
          containers: [
            container(
              'source',
              ['/bin/sh', '-c', 'cat "$0" > "$1"', '/captf/config/run.json', '/dev/termination-log'],
              {
                volumeMounts: [{ name: 'config', mountPath: '/captf/config', readOnly: true }],
              },
            ),
          ],
        }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    const waiting = await podUntil(
      core,
      namespace,
      name,
      'ContainerCreating',
      (p) => sourceState(p)?.waiting?.reason === 'ContainerCreating',
    );
    expect(waiting.status?.phase).toBe('Pending');
    const events = await eventually(
      'a FailedMount event',
      () => core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` }),
      (list) => list.items.some((event) => event.reason === 'FailedMount'),
    );
    expect(events.items.find((event) => event.reason === 'FailedMount')?.message).toContain(
      'secret "captf-run-secret-later" not found',
    );
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'captf-run-secret-later' }, stringData: { 'run.json': '{"version":1}' } },
    });
    const done = await podUntil(
      core,
      namespace,
      name,
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
      30_000,
    );
    expect(terminated(done)?.message).toBe('{"version":1}');
  });
});

describe('the runner image and a module image (DESIGN.md sections 9 and 10)', () => {
  it('init `runner` copies the runner into the emptyDir; `source` runs it with the test OpenTofu; the result parses', async () => {
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'captf-run-runner-apply' },
        stringData: { 'run.json': JSON.stringify({ version: 1, planHmacKey: 'k'.repeat(32) }) },
      },
    });
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'runner-apply',
        podSpec({
          volumes: [
            { name: 'captf-bin', emptyDir: {} },
            { name: 'captf-work', emptyDir: {} },
            { name: 'captf-config', secret: { secretName: 'captf-run-runner-apply', defaultMode: 0o400 } },
          ],
          // As src/core/job-manifest.ts builds it: args only, so the runner image's entrypoint runs.
          initContainers: [
            {
              name: 'runner',
              image: 'captf.local/runner:dev',
              args: ['copy', '/captf/bin'],
              volumeMounts: [{ name: 'captf-bin', mountPath: '/captf/bin' }],
            },
          ],
          containers: [
            {
              name: 'source',
              image: 'captf.local/tofu-module:1',
              command: ['/captf/bin/ld.so', '--library-path', '/captf/bin/lib', '/captf/bin/runner'],
              args: [
                'run',
                '--op=apply',
                '--module-dir=/captf/module',
                '--runtime=/captf/runtime',
                '--config-dir=/captf/config',
                '--work-dir=/captf/work',
                '--result-file=/dev/termination-log',
              ],
              terminationMessagePolicy: 'File',
              volumeMounts: [
                { name: 'captf-bin', mountPath: '/captf/bin', readOnly: true },
                { name: 'captf-config', mountPath: '/captf/config', readOnly: true },
                { name: 'captf-work', mountPath: '/captf/work' },
              ],
            },
          ],
        }),
      ),
    );
    const done = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'the runner to finish',
      (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed',
      90_000,
    );
    const parsed = parseRunnerResult(terminated(done)?.message);
    expect(parsed).toMatchObject({ ok: true, result: { op: 'apply', result: 'succeeded' } });
    expect(terminated(done)?.exitCode).toBe(0);
    await jobCondition(config, namespace, 'runner-apply', 'Complete');
  });
});

describe('image pull (C09)', () => {
  it('C09: an unknown image shows ErrImagePull, then ImagePullBackOff, alternating, restartCount 0', async () => {
    const recorder = await recordPods(config, namespace);
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'unknown-image',
        podSpec({ containers: [{ name: 'source', image: 'captf.local/no-such-image:1', command: ['/x'] }] }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    const reasonsOf = () =>
      recorder
        .of(name)
        .map((entry) => sourceState(entry.pod)?.waiting?.reason)
        .filter((reason) => reason !== undefined);
    await eventually(
      'ErrImagePull, ImagePullBackOff, ErrImagePull',
      async () => reasonsOf(),
      (reasons) =>
        reasons.join(',').includes('ErrImagePull,ImagePullBackOff') &&
        reasons.lastIndexOf('ErrImagePull') > reasons.indexOf('ImagePullBackOff'),
      30_000,
    );
    recorder.stop();
    const live = await core.readNamespacedPod({ namespace, name });
    expect(live.status?.phase).toBe('Pending');
    expect(live.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    expect(sourceState(live)?.waiting?.message).toContain('captf.local/no-such-image:1');
  });

  it('C09: a pull that recovers (the image appears) runs the pod normally', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'late-image',
        podSpec({
          containers: [
            {
              name: 'source',
              image: 'captf.local/late-image:1',
              command: ['/captf/report.sh', '/dev/termination-log', 'late but fine', '0'],
            },
          ],
        }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(
      core,
      namespace,
      name,
      'ErrImagePull',
      (p) => sourceState(p)?.waiting?.reason === 'ErrImagePull',
    );
    cpSync(join(imageDirs[0] ?? '', 'testbox'), join(lateImages, 'late-image'), { recursive: true });
    const done = await podUntil(
      core,
      namespace,
      name,
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
      30_000,
    );
    expect(terminated(done)).toMatchObject({ exitCode: 0, message: 'late but fine' });
    expect(done.status?.containerStatuses?.[0]?.restartCount).toBe(0);
  });

  it('a digest reference resolves while the directory has that digest; another digest does not pull', async () => {
    const pulled = pullLocalImage('testbox', undefined, imageDirs, {});
    if (pulled.kind !== 'pulled') throw new Error(pulled.message);
    const pinned = await createJob(
      config,
      core,
      namespace,
      job(
        'pinned',
        podSpec({
          containers: [
            {
              name: 'source',
              image: `captf.local/testbox@${pulled.image.digest}`,
              command: ['/captf/report.sh', '/dev/termination-log', 'pinned', '0'],
            },
          ],
        }),
      ),
    );
    const done = await podUntil(
      core,
      namespace,
      pinned.metadata?.name ?? '',
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
    );
    expect(done.status?.containerStatuses?.[0]?.imageID).toBe(`captf.local/testbox@${pulled.image.digest}`);
    const other = await createJob(
      config,
      core,
      namespace,
      job(
        'other-digest',
        podSpec({
          containers: [
            { name: 'source', image: `captf.local/testbox@sha256:${'0'.repeat(64)}`, command: ['/x'] },
          ],
        }),
      ),
    );
    const waiting = await podUntil(
      core,
      namespace,
      other.metadata?.name ?? '',
      'ErrImagePull',
      (p) => sourceState(p)?.waiting?.reason === 'ErrImagePull',
    );
    expect(sourceState(waiting)?.waiting?.message).toContain('manifest unknown');
  });

  it('C09: an invalid reference shows InvalidImageName', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'invalid-image',
        podSpec({ containers: [{ name: 'source', image: 'captf.local/Bad_Name:1', command: ['/x'] }] }),
      ),
    );
    const waiting = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'InvalidImageName',
      (p) => sourceState(p)?.waiting?.reason === 'InvalidImageName',
    );
    expect(waiting.status?.phase).toBe('Pending');
  });
});

describe('deletion and deadlines', () => {
  it('pod deletion: SIGTERM reaches the process within the grace period, the pod ends and disappears', async () => {
    const recorder = await recordPods(config, namespace);
    const trapTerm = 'trap \'printf "got SIGTERM" > "$0"; exit 143\' TERM; while :; do sleep 0.1; done';
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'graceful',
        podSpec({
          containers: [container('source', ['/bin/sh', '-c', trapTerm, '/dev/termination-log'])],
          terminationGracePeriodSeconds: 20,
        }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(core, namespace, name, 'Running', (p) => p.status?.phase === 'Running');
    const deletedAt = Date.now();
    await core.deleteNamespacedPod({ namespace, name });
    await eventually(
      'the pod object to disappear',
      () => core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` }),
      (list) => list.items.length === 0,
      30_000,
    );
    recorder.stop();
    const last = recorder.of(name).findLast((entry) => terminated(entry.pod) !== undefined);
    expect(last?.pod.status?.phase).toBe('Failed');
    expect(terminated(last?.pod as V1Pod)).toMatchObject({ exitCode: 143, message: 'got SIGTERM' });
    // Well inside the 20 s grace: the process handled SIGTERM, it was not killed at the end of the grace.
    expect(Date.now() - deletedAt).toBeLessThan(15_000);
  });

  it('C07: an evicted pod keeps the DisruptionTarget condition, gets SIGTERM and ends Failed with exit 143', async () => {
    const recorder = await recordPods(config, namespace);
    const trapTerm = 'trap \'printf "interrupted" > "$0"; exit 143\' TERM; while :; do sleep 0.1; done';
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'evicted',
        podSpec({ containers: [container('source', ['/bin/sh', '-c', trapTerm, '/dev/termination-log'])] }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(core, namespace, name, 'Running', (p) => p.status?.phase === 'Running');
    await core.createNamespacedPodEviction({
      namespace,
      name,
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
    });
    await eventually(
      'the evicted pod to disappear',
      () => core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` }),
      (list) => list.items.length === 0,
      30_000,
    );
    recorder.stop();
    const last = recorder.of(name).findLast((entry) => terminated(entry.pod) !== undefined)?.pod;
    expect(last?.status?.phase).toBe('Failed');
    expect(terminated(last as V1Pod)).toMatchObject({ exitCode: 143, message: 'interrupted' });
    const disruption = last?.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
    expect(disruption).toMatchObject({ status: 'True', reason: 'EvictionByEvictionAPI' });
  });

  it('pod deletion: a process that ignores SIGTERM is SIGKILLed after the grace period (exit 137)', async () => {
    const recorder = await recordPods(config, namespace);
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'stubborn',
        podSpec({
          containers: [container('source', ['/bin/sh', '-c', "trap '' TERM; while :; do sleep 0.1; done"])],
          terminationGracePeriodSeconds: 2,
        }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(core, namespace, name, 'Running', (p) => p.status?.phase === 'Running');
    const deletedAt = Date.now();
    await core.deleteNamespacedPod({ namespace, name });
    await eventually(
      'the pod object to disappear',
      () => core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` }),
      (list) => list.items.length === 0,
      30_000,
    );
    recorder.stop();
    const last = recorder.of(name).findLast((entry) => terminated(entry.pod) !== undefined);
    expect(terminated(last?.pod as V1Pod)?.exitCode).toBe(137);
    expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(2000);
  });

  it('Job activeDeadlineSeconds: the Job controller deletes the pod, the node ends it, the Job reports DeadlineExceeded', async () => {
    const trapTerm = 'trap \'printf "stopped" > "$0"; exit 143\' TERM; while :; do sleep 0.1; done';
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'job-deadline',
        podSpec({ containers: [container('source', ['/bin/sh', '-c', trapTerm, '/dev/termination-log'])] }),
        3,
      ),
    );
    const condition = await jobCondition(config, namespace, 'job-deadline', 'Failed');
    expect(condition?.reason).toBe('DeadlineExceeded');
    await eventually(
      'the pod to be ended',
      () => core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${pod.metadata?.name}` }),
      (list) => list.items.every((p) => p.status?.phase === 'Failed'),
      30_000,
    );
  });

  it('C08: pod activeDeadlineSeconds: Failed/DeadlineExceeded at once, container still running; then SIGTERM ends it', async () => {
    const recorder = await recordPods(config, namespace);
    const trapTerm = 'trap \'printf "deadline" > "$0"; exit 143\' TERM; while :; do sleep 0.1; done';
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'pod-deadline',
        podSpec({
          activeDeadlineSeconds: 2,
          containers: [container('source', ['/bin/sh', '-c', trapTerm, '/dev/termination-log'])],
        }),
      ),
    );
    const failed = await podUntil(
      core,
      namespace,
      pod.metadata?.name ?? '',
      'DeadlineExceeded with the container stopped',
      (p) => p.status?.reason === 'DeadlineExceeded' && terminated(p) !== undefined,
    );
    expect(failed.status?.phase).toBe('Failed');
    expect(failed.status?.message).toBe('Pod was active on the node longer than the specified deadline');
    expect(terminated(failed)).toMatchObject({ exitCode: 143, message: 'deadline' });
    recorder.stop();
    const failedWhileRunning = recorder
      .of(pod.metadata?.name ?? '')
      .some(
        (entry) =>
          entry.pod.status?.reason === 'DeadlineExceeded' && sourceState(entry.pod)?.running !== undefined,
      );
    expect(failedWhileRunning).toBe(true);
    await jobCondition(config, namespace, 'pod-deadline', 'Failed');
  });
});

describe('node restart', () => {
  it('a pod running when the node process stops is reported lost by the next node process: 137, ContainerStatusUnknown', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job('survives-restart', podSpec({ containers: [container('source', ['/bin/sh', '-c', 'sleep 300'])] })),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(core, namespace, name, 'Running', (p) => p.status?.phase === 'Running');
    await node.stop({ unregister: false });
    node = await startNode();
    const failed = await podUntil(core, namespace, name, 'Failed', (p) => p.status?.phase === 'Failed');
    expect(terminated(failed)).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
    expect(nodeLog.some((line) => line.includes(`${name}: started by an earlier node process`))).toBe(true);
    await jobCondition(config, namespace, 'survives-restart', 'Failed');
  });
});
