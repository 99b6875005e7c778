import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { productionStep } from '../../../functions/production-step.ts';
import { type RunningServer, runServer } from '../../../functions/server.ts';
import { API_SERVER_EVENT_TYPES } from '../../../src/schemas/cloudevents.ts';
import { testStack } from '../../env/index.ts';

// DESIGN.md section 1: a lost, duplicated, reordered or replayed event changes nothing but latency. The real
// server (functions/main.ts: the real step over the real Redis and API server) gets one clean event for one
// object and a storm (every type and mode, duplicated, shuffled, replayed) for its twin; both end in the
// same state.

const GROUP = 'infrastructure.cluster.x-k8s.io';
const namespace = `converge-${randomBytes(3).toString('hex')}`;
const TOKEN = randomBytes(24).toString('hex');
const _root = join(import.meta.dirname, '..', '..', '..');
let server: RunningServer;
let kc: KubeConfig;

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

function event(
  type: string,
  name: string,
  uid: string,
  resourceVersion: string,
  structured: boolean,
): Delivery {
  const data = type.includes('.ref.')
    ? { apiVersion: `${GROUP}/v1alpha1`, kind: 'TerraformCluster', name, namespace }
    : {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'TerraformCluster',
        metadata: { name, namespace, uid, resourceVersion },
      };
  const id = randomBytes(8).toString('hex');
  const source = testStack().apiServerUrl;
  return structured
    ? {
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({
          specversion: '1.0',
          id,
          source,
          type,
          datacontenttype: 'application/json',
          data,
        }),
      }
    : {
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': id,
          'ce-source': source,
          'ce-type': type,
        },
        body: JSON.stringify(data),
      };
}

async function post(e: Delivery): Promise<number> {
  const response = await fetch(`${server.url}/events`, { method: 'POST', headers: e.headers, body: e.body });
  await response.arrayBuffer();
  return response.status;
}

async function createCluster(name: string): Promise<{ uid: string; resourceVersion: string }> {
  const created = (await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'terraformclusters',
    body: {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'TerraformCluster',
      metadata: { name, namespace },
      spec: { source: { image: 'registry.example.com/modules/demo:1.0.0' }, variables: { size: 'small' } },
    },
  })) as { metadata: { uid: string; resourceVersion: string } };
  return created.metadata;
}

async function stateOf(name: string) {
  const object = (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'terraformclusters',
    name,
  })) as { metadata: { finalizers?: string[] }; status?: { activeJob?: { op?: string; attempt?: number } } };
  const jobs = await kc
    .makeApiClient(BatchV1Api)
    .listNamespacedJob({ namespace, labelSelector: `captf.io/owner-name=${name}` });
  return {
    finalizers: object.metadata.finalizers ?? [],
    activeJob: { op: object.status?.activeJob?.op, attempt: object.status?.activeJob?.attempt },
    jobs: jobs.items.map((job) => ({
      op: job.metadata?.labels?.['captf.io/op'],
      attempt: job.metadata?.labels?.['captf.io/attempt'],
    })),
  };
}

beforeAll(async () => {
  const stack = testStack();
  kc = new KubeConfig();
  kc.loadFromFile(stack.kubeconfigPath);
  // The CRDs come from the global setup (test/env/crds.ts).
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  server = await runServer(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: stack.redisUrl,
      KUBECONFIG: stack.kubeconfigPath,
      CAPTF_AUTH_TOKEN: TOKEN,
      CAPTF_RUNNER_IMAGE: 'captf-runner:test',
      CAPTF_KEY_PREFIX: `converge-${randomBytes(3).toString('hex')}`,
      LOG_LEVEL: 'silent',
    },
    productionStep,
    { handleSignals: false },
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

it('a storm of duplicated, reordered and replayed events of every type and mode ends like one clean event', async () => {
  const clean = await createCluster('clean');
  const storm = await createCluster('storm');

  // One clean delivery, then the object settles through its own requeues (driven here by /reconcile).
  expect(
    await post(event('dev.knative.apiserver.ref.add', 'clean', clean.uid, clean.resourceVersion, false)),
  ).toBe(200);

  // Every type in both modes, each twice (duplicates), shuffled (reordered), then the whole set again (replay).
  const storming = API_SERVER_EVENT_TYPES.flatMap((type) =>
    [false, true].flatMap((structured) => [
      event(type, 'storm', storm.uid, storm.resourceVersion, structured),
      event(type, 'storm', storm.uid, storm.resourceVersion, structured),
    ]),
  );
  const shuffled = [...storming].sort(() => Math.random() - 0.5);
  const statuses = await Promise.all([...shuffled, ...shuffled].map(post));
  for (const status of statuses) expect([200, 202]).toContain(status);

  // Same number of follow-up steps for both, like their requeues would bring.
  for (let i = 0; i < 3; i++) {
    for (const name of ['clean', 'storm']) {
      const response = await fetch(`${server.url}/reconcile/TerraformCluster/${namespace}/${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status, await response.text()).toBeLessThan(300);
    }
  }
  const [a, b] = await Promise.all([stateOf('clean'), stateOf('storm')]);
  expect(a).toEqual({
    finalizers: [expect.any(String)],
    activeJob: { op: 'apply', attempt: 1 },
    jobs: [{ op: 'apply', attempt: '1' }],
  });
  expect(b).toEqual(a);
});
