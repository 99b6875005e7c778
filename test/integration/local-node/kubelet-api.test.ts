import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { CoreV1Api, type CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig, makeKubeApis } from '../../../src/adapters/kube/connection.ts';
import { ApiKubeReader } from '../../../src/adapters/kube/reader.ts';
import { RequestCounter } from '../../../src/adapters/kube/request-count.ts';
import { type Kubectl, kubectlFor } from '../../../src/local/kubectl.ts';
import { type LocalNode, startLocalNode } from '../../../src/local/node/local-node.ts';
import { httpStatusOf } from '../../../src/local/node/node-api.ts';
import type { PlanChanges } from '../../../src/schemas/plan-changes.ts';
import {
  PLAN_CHANGES_LOG_TAIL_LINES,
  planChangesLogLines,
  readPlanChangesLog,
} from '../../../src/schemas/plan-changes-log.ts';
import { testStack } from '../../env/index.ts';
import { container, createJob, eventually, job, podSpec, podUntil } from './cluster.ts';

// The local node as a kubelet for operators, through the real API server and the stack's kubectl:
// `kubectl logs` reaches the node's kubelet API over verified TLS, and `kubectl describe pod` shows the
// Events a kubelet posts. Own namespace and node; both are removed in afterAll.

const suffix = randomBytes(3).toString('hex');
const namespace = `kubelet-api-${suffix}`;
const nodeName = `captf-local-node-${suffix}`;
const config = new KubeConfig();
let core: CoreV1Api;
let kubectl: Kubectl;
let node: LocalNode;
const nodeLog: string[] = [];

beforeAll(async () => {
  const stack = testStack();
  config.loadFromFile(stack.kubeconfigPath);
  core = config.makeApiClient(CoreV1Api);
  kubectl = kubectlFor(stack.kubectlPath, stack.kubeconfigPath);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  node = await startLocalNode({
    kubeConfig: config,
    nodeName,
    imageDirs: [join(import.meta.dirname, '../../fixtures/images')],
    kubeletTls: {
      certPath: stack.kubeletTls.certPath,
      keyPath: stack.kubeletTls.keyPath,
      clientCaPath: stack.kubeletTls.caPath,
    },
    // Scaled down so that a failing pull shows several back-off rounds within seconds.
    pullBackoff: { initialBackoffMs: 1000, maxBackoffMs: 2000, errImagePullMs: 500 },
    unregisterOnStop: true,
    log: (line) => nodeLog.push(line),
  });
});

afterAll(async () => {
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
  await eventually(
    'the namespace to be empty of pods',
    () => core.listNamespacedPod({ namespace }),
    (list) => list.items.length === 0,
    60_000,
  ).catch(() => undefined);
  await node?.stop();
  await core?.deleteNode({ name: nodeName }).catch((error: unknown) => {
    if (httpStatusOf(error) !== 404) throw error;
  });
});

/** The Events of pod `name`, oldest first. */
async function podEvents(name: string): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items;
}

const kubectlError = (run: Promise<string>): Promise<string> =>
  run.then(
    (out) => `unexpected success: ${out}`,
    (error: Error) => error.message,
  );

describe('the kubelet API', () => {
  it('the Node reports InternalIP 127.0.0.1 and the port of its kubelet API', async () => {
    const registered = await core.readNode({ name: nodeName });
    expect(registered.status?.addresses).toContainEqual({ type: 'InternalIP', address: '127.0.0.1' });
    expect(registered.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBeGreaterThan(0);
  });

  it('answers only clients with the API server kubelet-client certificate; 404 for pods it does not run', async () => {
    const registered = await core.readNode({ name: nodeName });
    const port = registered.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
    const { kubeletTls } = testStack();
    const pki = dirname(kubeletTls.caPath);
    const get = (path: string, client?: { cert: string; key: string }) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path, ca: readFileSync(kubeletTls.caPath), ...client },
          (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => {
              body += chunk.toString();
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    const apiServer = {
      cert: readFileSync(join(pki, 'apiserver-kubelet-client.crt'), 'utf8'),
      key: readFileSync(join(pki, 'apiserver-kubelet-client.key'), 'utf8'),
    };
    // No client certificate: the TLS handshake itself is refused.
    await expect(get(`/containerLogs/${namespace}/nope/source`)).rejects.toThrow();
    // The node's own serving certificate is signed by the same CA but is no client certificate.
    await expect(
      get(`/containerLogs/${namespace}/nope/source`, {
        cert: readFileSync(kubeletTls.certPath, 'utf8'),
        key: readFileSync(kubeletTls.keyPath, 'utf8'),
      }),
    ).rejects.toThrow();
    expect(await get(`/containerLogs/${namespace}/nope/source`, apiServer)).toEqual({
      status: 404,
      body: 'pod "nope" does not exist',
    });
    expect(await get(`/containerLogs/${namespace}/nope/source?tailLines=-1`, apiServer)).toMatchObject({
      status: 422,
    });
  });
});

describe('kubectl logs', () => {
  const jobName = 'logs';
  let podName = '';

  it('-f streams a running container and ends when it exits', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        jobName,
        podSpec({
          initContainers: [container('prepare', ['/bin/sh', '-c', 'echo prepared'])],
          containers: [container('source', ['/bin/sh', '-c', 'echo one; echo two >&2; sleep 3; echo three'])],
        }),
      ),
    );
    podName = pod.metadata?.name ?? '';
    await podUntil(
      core,
      namespace,
      podName,
      'source running',
      (p) => p.status?.containerStatuses?.[0]?.state?.running !== undefined,
    );
    const followed = await kubectl.run(['logs', '-n', namespace, '-f', podName, '-c', 'source']);
    // "three" is written just before the container exits: the stream ran until then, and then ended.
    expect(followed).toBe('one\ntwo\nthree\n');
    const done = await podUntil(
      core,
      namespace,
      podName,
      'Succeeded',
      (p) => p.status?.phase === 'Succeeded',
    );
    expect(done.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
  });

  it('reads a finished container, an init container, the tail and a byte limit', async () => {
    const logs = (...args: string[]) => kubectl.run(['logs', '-n', namespace, ...args]);
    expect(await logs(podName, '-c', 'source')).toBe('one\ntwo\nthree\n');
    // The form from the issue: through the Job.
    expect(await logs(`job/${jobName}`, '-c', 'source')).toBe('one\ntwo\nthree\n');
    expect(await logs(podName, '-c', 'prepare')).toBe('prepared\n');
    expect(await logs(podName, '-c', 'source', '--tail=2')).toBe('two\nthree\n');
    expect(await logs(podName, '-c', 'source', '--limit-bytes=5')).toBe('one\nt');
  });

  it('the readable plan a container prints last reaches the controller through its log (DESIGN.md section 11)', async () => {
    const resources = Array.from({ length: 1000 }, (_, i) => ({
      address: `module.pool["zone-${i % 3}"].terraform_data.node[${i}]`,
      action: i < 40 ? ('replace' as const) : ('update' as const),
      paths: ['input.label', 'tags["team"]'],
    }));
    const changes: PlanChanges = {
      resources,
      omittedResources: 0,
      destructive: resources.slice(0, 20).map((r) => r.address),
      outputs: [{ name: 'endpoint', action: 'update' }],
      counts: {
        resources: 1000,
        create: 0,
        update: 960,
        delete: 0,
        replace: 40,
        read: 0,
        forget: 0,
        outputs: 1,
      },
    };
    const lines = planChangesLogLines(JSON.stringify(changes)).map((line) => line.trimEnd());
    // Hundreds of lines before it (the plan step's own), and the runner's result line after it.
    const before = Array.from({ length: 500 }, (_, i) => `[plan] terraform_data.node[${i}]: Plan to update`);
    const pod = await createJob(
      config,
      core,
      namespace,
      job(
        'plan-log',
        podSpec({
          containers: [
            container('source', [
              '/bin/sh',
              '-c',
              'printf "%s\\n" "$@"',
              'sh',
              ...before,
              ...lines,
              'captf-runner: result blocked',
            ]),
          ],
        }),
      ),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(core, namespace, name, 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    const reader = new ApiKubeReader(
      makeKubeApis(loadKubeConfig({ kind: 'file', path: testStack().kubeconfigPath }), {
        requestTimeoutMs: 10_000,
        counter: new RequestCounter(),
      }),
      { pageSize: 500 },
    );
    const log = await reader.readPodLog(namespace, name, 'source', PLAN_CHANGES_LOG_TAIL_LINES);
    expect(log?.split('\n').length).toBeLessThanOrEqual(PLAN_CHANGES_LOG_TAIL_LINES + 1);
    expect(log).not.toContain('node[0]: Plan to update');
    expect(readPlanChangesLog(log ?? '')).toEqual({ ok: true, changes });
    expect(await reader.readPodLog(namespace, 'no-such-pod', 'source', 10)).toBeUndefined();
  });

  it('--previous: the container never restarted, so there is no previous instance (400)', async () => {
    const message = await kubectlError(
      kubectl.run(['logs', '-n', namespace, podName, '-c', 'source', '--previous']),
    );
    expect(message).toContain(
      `Error from server (BadRequest): previous terminated container "source" in pod "${podName}" not found`,
    );
  });
});

describe('pod Events like a kubelet', () => {
  it('a good image: Pulling, Pulled, Created, Started on the container, from the kubelet of this node', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job('events-good', podSpec({ containers: [container('source', ['/bin/sh', '-c', 'true'])] })),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(core, namespace, name, 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    const events = await eventually(
      'the Started event',
      () => podEvents(name),
      (list) => list.some((event) => event.reason === 'Started'),
    );
    const byReason = (reason: string) => events.find((event) => event.reason === reason);
    expect(byReason('Pulling')?.message).toBe('Pulling image "captf.local/testbox:test"');
    expect(byReason('Pulled')?.message).toMatch(
      /^Successfully pulled image "captf\.local\/testbox:test" in [\d.]+m?s \([\d.]+m?s including waiting\)$/,
    );
    expect(byReason('Created')?.message).toBe('Created container source');
    expect(byReason('Started')?.message).toBe('Started container source');
    for (const reason of ['Pulling', 'Pulled', 'Created', 'Started']) {
      expect(byReason(reason)).toMatchObject({
        type: 'Normal',
        source: { component: 'kubelet', host: nodeName },
        involvedObject: { kind: 'Pod', name, fieldPath: 'spec.containers{source}' },
      });
    }
    const described = await kubectl.run(['describe', 'pod', '-n', namespace, name]);
    const eventLines = described.slice(described.indexOf('Events:')).split('\n');
    // Event names sort by time like the kubelet's, so the Events of one second keep their order.
    const order = ['Pulling', 'Pulled', 'Created', 'Started'].map((reason) =>
      eventLines.findIndex((line) => line.includes(` ${reason} `)),
    );
    expect(order).toEqual([...order].sort((x, y) => x - y));
    for (const [reason, message] of [
      ['Pulling', 'Pulling image "captf.local/testbox:test"'],
      ['Pulled', 'Successfully pulled image "captf.local/testbox:test"'],
      ['Created', 'Created container source'],
      ['Started', 'Started container source'],
    ] as const) {
      expect(eventLines.find((line) => line.includes(` ${reason} `))).toMatch(
        new RegExp(
          `Normal\\s+${reason}\\s+\\S+\\s+kubelet\\s+spec\\.containers\\{source\\}: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
        ),
      );
    }
  });

  it('an unknown image: Pulling, Failed with the pull error, Error: ErrImagePull, BackOff counted, Error: ImagePullBackOff', async () => {
    const image = 'captf.local/does-not-exist:1';
    const pod = await createJob(
      config,
      core,
      namespace,
      job('events-bad', podSpec({ containers: [container('source', ['true'], { image })] })),
    );
    const name = pod.metadata?.name ?? '';
    // Scaled back-off: ~1.5 s per round; a second BackOff folds into the first one's count.
    const events = await eventually(
      'a repeated BackOff',
      () => podEvents(name),
      (list) => list.some((event) => event.reason === 'BackOff' && (event.count ?? 0) >= 2),
      30_000,
    );
    const messages = events.map((event) => `${event.type} ${event.reason}: ${event.message}`);
    expect(messages).toContain(`Normal Pulling: Pulling image "${image}"`);
    expect(messages).toContain(`Normal BackOff: Back-off pulling image "${image}"`);
    expect(messages).toContain('Warning Failed: Error: ErrImagePull');
    expect(messages).toContain('Warning Failed: Error: ImagePullBackOff');
    expect(
      messages.find((message) => message.startsWith(`Warning Failed: Failed to pull image "${image}": `)),
    ).toContain('manifest unknown: no image directory does-not-exist');
    // One Event per distinct message, however many rounds: repeats only bump the count.
    const keys = events.map((event) => `${event.reason}/${event.message}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(events.find((event) => event.reason === 'Pulling')?.count).toBeGreaterThanOrEqual(2);
    // The container has no log yet; the kubelet says why.
    const message = await kubectlError(kubectl.run(['logs', '-n', namespace, name, '-c', 'source']));
    expect(message).toMatch(
      new RegExp(
        `container "source" in pod "${name}" is waiting to start: (image can't be pulled|trying and failing to pull image)`,
      ),
    );
    const described = await kubectl.run(['describe', 'pod', '-n', namespace, name]);
    // describe names the container of each Event, and folds repeats into "(xN over ...)".
    expect(described).toMatch(
      /Warning\s+Failed\s+\S+ \(x\d+ over \S+\)\s+kubelet\s+spec\.containers\{source\}: Error: ImagePullBackOff/,
    );
    expect(described).toMatch(
      /Normal\s+BackOff\s+.*kubelet\s+spec\.containers\{source\}: Back-off pulling image/,
    );
  });

  it('deleting a running pod: Killing "Stopping container <name>"', async () => {
    const pod = await createJob(
      config,
      core,
      namespace,
      job('events-kill', podSpec({ containers: [container('source', ['/bin/sh', '-c', 'sleep 60'])] })),
    );
    const name = pod.metadata?.name ?? '';
    await podUntil(
      core,
      namespace,
      name,
      'source running',
      (p) => p.status?.containerStatuses?.[0]?.state?.running !== undefined,
    );
    await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 1 });
    const events = await eventually(
      'a Killing event',
      () => podEvents(name),
      (list) => list.some((event) => event.reason === 'Killing'),
    );
    expect(events.find((event) => event.reason === 'Killing')).toMatchObject({
      type: 'Normal',
      message: 'Stopping container source',
      involvedObject: { fieldPath: 'spec.containers{source}' },
    });
  });
});
