import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { parseCloudEvent } from '../../../src/http/cloudevent.ts';
import { kubeWatchSource } from '../../../src/relay/kube-source.ts';
import { runRelay } from '../../../src/relay/relay.ts';
import { RELAY_RESOURCES, type RelayResource, watchedResources } from '../../../src/relay/resources.ts';
import { DEFAULT_RETRY_POLICY } from '../../../src/relay/retry.ts';
import { createSender } from '../../../src/relay/sender.ts';
import type { WatchLoopStats, WatchSource } from '../../../src/relay/watch-loop.ts';
import { namedLease } from '../../../src/schedule/single-holder-lease.ts';
import type { ApiServerMode } from '../../../src/schemas/cloudevents.ts';
import { testStack } from '../../env/index.ts';

// The bundled relay against the real API server and Redis: every change reaches a local receiver as an
// ApiServerSource-shaped CloudEvent, through receiver 503s, a cut watch connection and a 410 relist, and
// only the replica holding the Redis lease sends.

const root = join(import.meta.dirname, '..', '..', '..');
const namespace = `relay-${randomBytes(3).toString('hex')}`;
const GROUP = 'infrastructure.cluster.x-k8s.io';
const clusterResource = RELAY_RESOURCES.find((r) => r.kind === 'TerraformCluster') as RelayResource;
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined };

interface Received {
  type: string;
  kind: string;
  name: string;
  namespace: string;
  uid?: string;
}

/** A real HTTP receiver standing in for `/events`; answers 503 to the first `failNext` requests. */
class Receiver {
  readonly events: Received[] = [];
  /** `namespace/name` of every event received, whatever its namespace. */
  readonly everywhere: string[] = [];
  failNext = 0;
  failures = 0;
  readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (this.failNext > 0) {
        this.failNext--;
        this.failures++;
        res.writeHead(503, { 'retry-after': '0' }).end();
        return;
      }
      const parsed = parseCloudEvent(req.headers, Buffer.concat(chunks).toString('utf8'));
      if (parsed.ok) this.everywhere.push(`${parsed.subject.namespace}/${parsed.subject.name}`);
      if (parsed.ok && parsed.subject.namespace === namespace) {
        const s = parsed.subject;
        this.events.push({
          type: `${s.mode}.${s.verb}`,
          kind: s.kind,
          name: s.name,
          namespace: s.namespace,
          ...(s.uid ? { uid: s.uid } : {}),
        });
      }
      res.writeHead(parsed.ok ? 200 : 400).end();
    });
  });
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/events`;
  }
  has(type: string, name: string): boolean {
    return this.events.some((e) => e.type === type && e.name === name);
  }
}

/** A TCP proxy in front of the API server, so a test can cut the relay's watch connections for real. */
class CuttableProxy {
  readonly sockets = new Set<Socket>();
  blocked = false;
  readonly server = createTcpServer((client) => {
    if (this.blocked) {
      client.destroy();
      return;
    }
    const upstream = connect(this.port, this.host);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  readonly host: string;
  readonly port: number;
  constructor(host: string, port: number) {
    this.host = host;
    this.port = port;
  }
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  cutAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }
}

let admin: KubeConfig;
let viaProxy: KubeConfig;
let proxy: CuttableProxy;
let objects: CustomObjectsApi;
let adapter: RedisAdapter;

async function eventually(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`relay: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(100);
  }
}

function cluster(name: string) {
  return {
    apiVersion: `${GROUP}/v1alpha1`,
    kind: 'TerraformCluster',
    metadata: { name, namespace },
    spec: { source: { image: 'registry.example.com/modules/demo:1.0.0' } },
  };
}

const create = (name: string) =>
  objects.createNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'terraformclusters',
    body: cluster(name),
  });
const remove = (name: string) =>
  objects.deleteNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'terraformclusters',
    name,
  });

/** Starts one relay replica; returns a stop function. */
function startRelay(options: {
  receiver: Receiver;
  holder: string;
  leaseKey: string;
  mode?: ApiServerMode;
  source?: WatchSource;
  resources?: RelayResource[];
}): { stop: () => Promise<void> } {
  const controller = new AbortController();
  const done = runRelay({
    resources: options.resources ?? [clusterResource],
    source: options.source ?? kubeWatchSource(viaProxy),
    send: createSender({
      url: options.receiver.url,
      token: undefined,
      policy: { ...DEFAULT_RETRY_POLICY, baseDelayMs: 50 },
      timeoutMs: 5000,
      logger: silent,
    }),
    mode: options.mode ?? 'ref',
    apiServerUrl: testStack().apiServerUrl,
    lease: namedLease(adapter, options.leaseKey),
    holder: options.holder,
    leaseTtlMs: 3000,
    logger: silent,
    backoff: { initialMs: 100, maxMs: 1000 },
    signal: controller.signal,
    clock: Date.now,
  });
  return {
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

beforeAll(async () => {
  const stack = testStack();
  admin = new KubeConfig();
  admin.loadFromFile(stack.kubeconfigPath);
  objects = admin.makeApiClient(CustomObjectsApi);
  const api = new URL(stack.apiServerUrl);
  proxy = new CuttableProxy(api.hostname, Number(api.port));
  const proxyUrl = await proxy.start();
  const current = admin.getCurrentCluster();
  const user = admin.getCurrentUser();
  if (current === null || user === null) throw new Error('kubeconfig: no current cluster or user');
  viaProxy = new KubeConfig();
  viaProxy.loadFromClusterAndUser({ ...current, server: proxyUrl }, user);
  adapter = createRedisAdapter({ url: stack.redisUrl, keyPrefix: `test-relay-${namespace}` });
  await adapter.waitUntilReady(10_000);
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const kubectl = (args: string[]) =>
    promisify(execFile)(testStack().kubectlPath, ['--kubeconfig', stack.kubeconfigPath, ...args]);
  await kubectl([
    'apply',
    '-f',
    join(root, 'infra/crds/infrastructure.cluster.x-k8s.io_terraformclusters.yaml'),
  ]);
  await kubectl(['wait', '--for=condition=Established', `crd/terraformclusters.${GROUP}`, '--timeout=60s']);
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
}, 120_000);

afterAll(async () => {
  proxy?.server.close();
  await adapter?.close();
});

describe('relay', () => {
  it('CAPTF_WATCH_NAMESPACES: only the watched namespace is listed and watched; another namespace sends nothing', async () => {
    const other = `${namespace}-other`;
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: other } } });
    const inOther = (name: string) =>
      objects.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1alpha1',
        namespace: other,
        plural: 'terraformclusters',
        body: { ...cluster(name), metadata: { name, namespace: other } },
      });
    await inOther('before');
    const receiver = new Receiver();
    await receiver.start();
    const resources = watchedResources([namespace]).filter((r) => r.kind === 'TerraformCluster');
    expect(resources).toEqual([{ ...clusterResource, namespace }]);
    const relay = startRelay({ receiver, holder: 'a', leaseKey: `test:{relay-${namespace}}:ns`, resources });
    try {
      await create('scoped');
      await inOther('after');
      await eventually(() => receiver.has('ref.add', 'scoped'), 'add scoped');
      // The other namespace's changes were made before the watched one's last: had they been watched,
      // they would have arrived first (one watch per namespace still delivers each in order; give it 1 s).
      await sleep(1000);
      expect(receiver.everywhere.filter((key) => key.startsWith(`${other}/`))).toEqual([]);
      expect(receiver.everywhere).toContain(`${namespace}/scoped`);
    } finally {
      await relay.stop();
      await remove('scoped');
      await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: other });
    }
  });

  it('create, update and delete reach /events as reference-mode CloudEvents, through receiver 503s', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const relay = startRelay({ receiver, holder: 'a', leaseKey: `test:{relay-${namespace}}:a` });
    try {
      await sleep(500);
      receiver.failNext = 2;
      await create('c1');
      await eventually(() => receiver.has('ref.add', 'c1'), 'add c1');
      expect(receiver.failures).toBe(2);
      await objects.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: 'v1alpha1',
          namespace,
          plural: 'terraformclusters',
          name: 'c1',
          body: { metadata: { annotations: { touched: 'yes' } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await eventually(() => receiver.has('ref.update', 'c1'), 'update c1');
      await remove('c1');
      await eventually(() => receiver.has('ref.delete', 'c1'), 'delete c1');
    } finally {
      await relay.stop();
    }
  });

  it('a watch connection cut (and refused for 2 s) loses nothing: changes made meanwhile arrive', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const relay = startRelay({ receiver, holder: 'a', leaseKey: `test:{relay-${namespace}}:b` });
    try {
      await create('c2');
      await eventually(() => receiver.has('ref.add', 'c2') || receiver.has('ref.update', 'c2'), 'c2 seen');
      proxy.blocked = true;
      proxy.cutAll();
      await create('c3');
      await remove('c2');
      await sleep(2000);
      proxy.blocked = false;
      await eventually(() => receiver.has('ref.add', 'c3'), 'add c3 after the cut');
      await eventually(() => receiver.has('ref.delete', 'c2'), 'delete c2 after the cut');
    } finally {
      await relay.stop();
    }
  });

  it('410 Gone relists and the relist emits every object it sees (resource mode carries uid)', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const real = kubeWatchSource(viaProxy);
    let first = true;
    const stats: WatchLoopStats = { lists: 0, watches: 0, gone: 0 };
    // The first list answers an ancient resourceVersion, so the watch from it is answered 410 Gone.
    const stale: WatchSource = {
      async list(resource) {
        const list = await real.list(resource);
        stats.lists++;
        if (first) {
          first = false;
          return { items: [], resourceVersion: '1' };
        }
        return list;
      },
      async watch(resource, rv, onEvent, signal) {
        const end = await real.watch(resource, rv, onEvent, signal);
        if (end.kind === 'gone') stats.gone++;
        return end;
      },
    };
    const relay = startRelay({
      receiver,
      holder: 'a',
      leaseKey: `test:{relay-${namespace}}:c`,
      source: stale,
      mode: 'resource',
    });
    try {
      await eventually(() => receiver.has('resource.add', 'c3'), 'c3 from the relist');
      expect(stats.gone).toBeGreaterThanOrEqual(1);
      expect(stats.lists).toBeGreaterThanOrEqual(2);
      expect(receiver.events.find((e) => e.name === 'c3')?.uid).toEqual(expect.any(String));
    } finally {
      await relay.stop();
    }
  });

  it('two replicas: only the lease holder sends; when it stops, the other takes over and misses nothing', async () => {
    const leaseKey = `test:{relay-${namespace}}:d`;
    const receiverA = new Receiver();
    const receiverB = new Receiver();
    await receiverA.start();
    await receiverB.start();
    const a = startRelay({ receiver: receiverA, holder: 'a', leaseKey });
    await eventually(() => receiverA.has('ref.add', 'c3'), 'replica a lists c3');
    const b = startRelay({ receiver: receiverB, holder: 'b', leaseKey });
    try {
      await create('c4');
      await eventually(() => receiverA.has('ref.add', 'c4'), 'replica a sends c4');
      await sleep(1000);
      expect(receiverB.events).toEqual([]);
      await a.stop();
      await create('c5');
      await eventually(() => receiverB.has('ref.add', 'c5'), 'replica b sends c5 after taking over');
      expect(receiverB.has('ref.add', 'c4')).toBe(true);
      expect(await adapter.client.get(adapter.keys.namedLease(leaseKey))).toBe('b');
    } finally {
      await b.stop();
    }
  });
});
