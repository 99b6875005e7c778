import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateBinaries } from '../../../src/local/binaries.ts';
import { kubectlFor } from '../../../src/local/kubectl.ts';
import { testStack } from '../../env/index.ts';

/**
 * Cluster API v1.14.2's real core manager in the test env (issue 11 item 6), against the real API server:
 * its controllers adopt a TerraformCluster named by a Cluster and read the v1beta2 contract from it, and
 * the API server really calls its admission and conversion webhooks. No CAPTF controller runs here: the
 * test writes the TerraformCluster's status itself, as the controller would.
 */

const stack = testStack();
const kubectl = kubectlFor(stack.kubectlPath, stack.kubeconfigPath);
const namespace = `capi-${randomBytes(3).toString('hex')}`;
const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io';
const ENDPOINT = { host: '10.20.0.10', port: 6443 };

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
    uid: string;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

async function get(resource: string, name: string): Promise<KubeObject> {
  return JSON.parse(await kubectl.run(['get', resource, name, '-n', namespace, '-o', 'json'])) as KubeObject;
}

async function create(object: Record<string, unknown>): Promise<void> {
  await kubectl.run(['create', '-n', namespace, '-f', '-'], JSON.stringify(object));
}

/** Polls `read` until `done` holds; on timeout throws with the last value and the manager's log tail. */
async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      const log = readFileSync(stack.capi.logPath, 'utf8').trimEnd().split('\n').slice(-30).join('\n');
      throw new Error(
        `timed out waiting for ${what}; last: ${JSON.stringify(value).slice(0, 3000)}\ncapi-manager log tail:\n${log}`,
      );
    }
    await sleep(250);
  }
}

/** `controller_runtime_webhook_requests_total` of one webhook path on the manager's metrics, all codes. */
async function webhookRequests(path: string): Promise<number> {
  const text = await (await fetch(stack.capi.metricsUrl)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('controller_runtime_webhook_requests_total{') && line.includes(`webhook="${path}"`))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

function terraformCluster(name: string): Record<string, unknown> {
  return {
    apiVersion: `${INFRA_GROUP}/v1alpha1`,
    kind: 'TerraformCluster',
    metadata: { name },
    spec: { source: { image: 'registry.example.com/modules/demo-cluster:1.4.0' } },
  };
}

function cluster(name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name },
    spec: { infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformCluster', name }, ...spec },
  };
}

beforeAll(async () => {
  await kubectl.run(['create', 'namespace', namespace]);
});

afterAll(async () => {
  // The manager runs for the whole test run: it removes its finalizers while the namespace goes.
  await kubectl.run(['delete', 'namespace', namespace, '--wait=false']);
});

describe('Cluster API v1.14.2 core manager in the test env', () => {
  it('is ready, with its CRDs served in v1beta1 and v1beta2', async () => {
    expect(stack.capi.version).toBe('1.14.2');
    expect((await fetch(`${stack.capi.healthUrl}/readyz`)).status).toBe(200);
    const versions = await kubectl.run([
      'get',
      'crd',
      'clusters.cluster.x-k8s.io',
      '-o',
      'jsonpath={.spec.versions[?(@.served==true)].name} {.spec.conversion.strategy} {.spec.conversion.webhook.clientConfig.url}',
    ]);
    expect(versions).toBe(`v1beta1 v1beta2 Webhook ${stack.capi.webhookUrl}/convert`);
  });

  it('a Cluster over a TerraformCluster: CAPI adopts it, then reads provisioned and the endpoint from it', async () => {
    await create(terraformCluster('demo'));
    await create(cluster('demo'));
    const owned = await eventually(
      'the owner reference on the TerraformCluster',
      () => get('terraformcluster', 'demo'),
      (object) => (object.metadata.ownerReferences ?? []).some((ref) => ref.kind === 'Cluster'),
    );
    const capiCluster = await get('cluster', 'demo');
    expect(owned.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Cluster',
        name: 'demo',
        uid: capiCluster.metadata.uid,
      }),
    ]);
    expect(owned.metadata.labels).toMatchObject({ 'cluster.x-k8s.io/cluster-name': 'demo' });
    expect(capiCluster.status?.initialization).not.toMatchObject({ infrastructureProvisioned: true });

    // What the CAPTF controller writes once the cluster module has applied (DESIGN.md, the contract fields).
    await kubectl.run([
      'patch',
      'terraformcluster',
      'demo',
      '-n',
      namespace,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { controlPlaneEndpoint: ENDPOINT } }),
    ]);
    await kubectl.run([
      'patch',
      'terraformcluster',
      'demo',
      '-n',
      namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { initialization: { provisioned: true }, ready: true } }),
    ]);
    const provisioned = await eventually(
      "the Cluster's infrastructureProvisioned",
      () => get('cluster', 'demo'),
      (object) =>
        (object.status?.initialization as { infrastructureProvisioned?: boolean } | undefined)
          ?.infrastructureProvisioned === true,
    );
    expect(provisioned.spec?.controlPlaneEndpoint).toEqual(ENDPOINT);
    expect(provisioned.status?.conditions).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'InfrastructureReady', status: 'True' })]),
    );
  });

  it("CAPI's validating webhook refuses an invalid Cluster with its own message", async () => {
    const before = await webhookRequests('/validate-cluster-x-k8s-io-v1beta2-cluster');
    const refused = await create(
      cluster('bad-cidr', { clusterNetwork: { pods: { cidrBlocks: ['not-a-cidr'] } } }),
    ).then(
      () => undefined,
      (error: Error) => error.message,
    );
    // The webhook answers with a structured Invalid status (apierrors.NewInvalid), which the API server
    // shows as its own "is invalid" line; the Go parser's words and the webhook's request count show whose.
    expect(refused).toContain(
      'The Cluster "bad-cidr" is invalid: spec.clusterNetwork.pods.cidrBlocks[0]: Invalid value: "not-a-cidr": invalid CIDR address: not-a-cidr',
    );
    expect(await webhookRequests('/validate-cluster-x-k8s-io-v1beta2-cluster')).toBeGreaterThan(before);
  });

  it("CAPI's defaulting webhook fills in a Machine: a v before its version, the cluster-name label", async () => {
    await create({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Machine',
      metadata: { name: 'defaulted' },
      spec: {
        clusterName: 'demo',
        version: '1.36.0',
        bootstrap: { dataSecretName: 'defaulted-bootstrap' },
        infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformMachine', name: 'defaulted' },
      },
    });
    const machine = await get('machine', 'defaulted');
    expect(machine.spec?.version).toBe('v1.36.0');
    expect(machine.metadata.labels).toMatchObject({ 'cluster.x-k8s.io/cluster-name': 'demo' });
    expect(machine.spec?.deletion).toMatchObject({ nodeDeletionTimeoutSeconds: 10 });
  });

  it('a v1beta1 read goes through the conversion webhook: the reference gets its version from our CRD label', async () => {
    const before = await webhookRequests('/convert');
    const v1beta1 = await get('clusters.v1beta1.cluster.x-k8s.io', 'demo');
    expect(v1beta1.apiVersion).toBe('cluster.x-k8s.io/v1beta1');
    // v1beta1 references carry apiVersion; v1beta2 keeps only the group, so the conversion webhook looks the
    // version up in the CRD's `cluster.x-k8s.io/v1beta2: v1alpha1` label.
    expect(v1beta1.spec?.infrastructureRef).toMatchObject({
      apiVersion: `${INFRA_GROUP}/v1alpha1`,
      kind: 'TerraformCluster',
      name: 'demo',
    });
    expect(v1beta1.status).toMatchObject({ infrastructureReady: true });
    expect(await webhookRequests('/convert')).toBeGreaterThan(before);
  });
});

describe('a missing Cluster API build', () => {
  it('fails loudly, naming the file and the command that builds it', () => {
    // A cache with every other component of the real one, and no capi-v<version>.
    const cache = mkdtempSync(join(tmpdir(), 'captf-no-capi-'));
    try {
      const realBin = join(stack.binDir, '..');
      const bin = join(cache, 'bin');
      mkdirSync(bin);
      for (const entry of readdirSync(realBin).filter((name) => !name.startsWith('capi-')))
        symlinkSync(join(realBin, entry), join(bin, entry));
      expect(() => locateBinaries({ CAPTF_CACHE: cache })).toThrow(
        /capi-v1\.14\.2\/cluster-api-manager is missing; build it with: bash scripts\/build-binaries\.sh capi/,
      );
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
