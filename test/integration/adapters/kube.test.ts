import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  type V1Job,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { fixedClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter, type KubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import type { CustomObject } from '../../../src/adapters/kube/custom-object.ts';
import { KubeError } from '../../../src/adapters/kube/errors.ts';
import { OUR_API_VERSION } from '../../../src/schemas/kinds/registry.ts';
import { testStack } from '../../env/index.ts';
import { testTempDir } from '../../env/temp-dir.ts';

// The Kubernetes adapter against the real local kube-apiserver, Job controller and garbage collector.

const namespace = `adapters-${randomBytes(3).toString('hex')}`;
const CRD_NAME = 'terraformmachines.infrastructure.cluster.x-k8s.io';
const reporter = { controller: 'captf.io/controller', instance: 'adapter-test' };
const clock = fixedClock(Date.UTC(2026, 10, 29, 12, 0, 0));

let adapter: KubeAdapter;
let config: KubeConfig;
let core: CoreV1Api;
let extensions: ApiextensionsV1Api;
let installedCrd = false;

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(250);
    value = await read();
  }
  return value;
}

/** The error a promise rejects with (fails the test if it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<KubeError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KubeError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

function jobNamed(name: string, labels: Record<string, string> = {}): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace, labels: { 'captf.io/managed': 'true', ...labels } },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'source', image: 'registry.invalid/module:1', command: ['/captf/bin/runner'] },
          ],
        },
      },
    },
  };
}

/**
 * The generated TerraformMachine CRD, as wire JSON. Created through the untyped custom-objects API because
 * client-node's typed serializer silently drops every schema key whose wire name differs from its
 * TypeScript name (`enum`, `default`, `x-kubernetes-*`), which would install a CRD without its validation.
 */
function terraformMachineCrd(): unknown {
  const file = join(process.cwd(), 'infra', 'crds', 'infrastructure.cluster.x-k8s.io_terraformmachines.yaml');
  return parse(readFileSync(file, 'utf8'));
}

function machine(name: string, labels: Record<string, string> = {}) {
  return {
    apiVersion: OUR_API_VERSION,
    kind: 'TerraformMachine',
    metadata: { name, namespace, labels },
    spec: { source: { image: 'registry.invalid/module:1' } },
  };
}

beforeAll(async () => {
  const stack = testStack();
  config = new KubeConfig();
  config.loadFromFile(stack.kubeconfigPath);
  core = config.makeApiClient(CoreV1Api);
  extensions = config.makeApiClient(ApiextensionsV1Api);
  adapter = createKubeAdapter({ source: { kind: 'loaded', config }, clock, reporter, pageSize: 3 });
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const existing = await extensions.readCustomResourceDefinition({ name: CRD_NAME }).catch(() => undefined);
  if (!existing) {
    await config.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      group: 'apiextensions.k8s.io',
      version: 'v1',
      plural: 'customresourcedefinitions',
      body: terraformMachineCrd(),
    });
    installedCrd = true;
  }
  const established = await eventually(
    () => extensions.readCustomResourceDefinition({ name: CRD_NAME }),
    (crd) => crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false,
  );
  expect(established.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')).toBe(
    true,
  );
  // The Job controller cannot create pods before the namespace's default ServiceAccount exists.
  await eventually(
    () => core.readNamespacedServiceAccount({ namespace, name: 'default' }).catch(() => undefined),
    (account) => account !== undefined,
  );
});

afterAll(async () => {
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  if (installedCrd) {
    // Leave the stack as found, so a later file can install the generated CRD.
    await extensions.deleteCustomResourceDefinition({ name: CRD_NAME }).catch(() => undefined);
    await eventually(
      () =>
        extensions.readCustomResourceDefinition({ name: CRD_NAME }).then(
          () => 'present',
          () => 'gone',
        ),
      (state) => state === 'gone',
    );
  }
});

describe('typed errors', () => {
  it('a second create of one Job name is AlreadyExists (409): the write outcome is "exists"', async () => {
    await adapter.writer.createJob(jobNamed('dup'));
    const error = await rejectionOf(adapter.writer.createJob(jobNamed('dup')));
    expect({
      code: error.code,
      httpStatus: error.httpStatus,
      reason: error.reason,
      outcome: error.outcome,
    }).toEqual({
      code: 'AlreadyExists',
      httpStatus: 409,
      reason: 'AlreadyExists',
      outcome: 'exists',
    });
    expect(error.message).toContain('create Job');
  });

  it('a Job spec the API server refuses is Invalid (422): rejected, so no Job exists', async () => {
    const bad = jobNamed('bad');
    const template = bad.spec?.template.spec;
    if (!template) throw new Error('fixture has no pod spec');
    template.restartPolicy = 'Always';
    const error = await rejectionOf(adapter.writer.createJob(bad));
    expect([error.code, error.httpStatus, error.outcome, error.outage]).toEqual([
      'Invalid',
      422,
      'rejected',
      false,
    ]);
    expect(await adapter.reader.getJob(namespace, 'bad')).toBeUndefined();
  });

  it('NotFound: a read answers undefined, a patch throws NotFound (rejected), a delete answers absent', async () => {
    expect(await adapter.reader.getJob(namespace, 'missing')).toBeUndefined();
    expect(await adapter.reader.getCustomObject('TerraformMachine', namespace, 'missing')).toBeUndefined();
    const error = await rejectionOf(
      adapter.writer.patchJobMetadata(
        { namespace, name: 'missing', resourceVersion: '1' },
        { labels: { a: 'b' } },
      ),
    );
    expect([error.code, error.httpStatus, error.outcome]).toEqual(['NotFound', 404, 'rejected']);
    expect(await adapter.writer.deleteJob(namespace, 'missing')).toBe('absent');
    expect(await adapter.writer.deleteSecret(namespace, 'missing')).toBe('absent');
    expect(await adapter.writer.deleteCustomObject('TerraformMachine', namespace, 'missing')).toBe('absent');
  });

  it('a write in a namespace that does not exist is NotFound: rejected', async () => {
    const job = jobNamed('nowhere');
    if (job.metadata) job.metadata.namespace = `absent-${randomBytes(3).toString('hex')}`;
    const error = await rejectionOf(adapter.writer.createJob(job));
    expect([error.code, error.outcome]).toEqual(['NotFound', 'rejected']);
  });

  it('Cluster API not installed: the Cluster reads as absent', async () => {
    expect(await adapter.reader.getCapiObject('Cluster', namespace, 'c-a')).toBeUndefined();
  });
});

describe('writes with resourceVersion preconditions', () => {
  let created: CustomObject;

  beforeAll(async () => {
    created = await adapter.writer.createCustomObject('TerraformMachine', machine('m-a'));
  });

  it('a status merge patch at the read version lands; the same stale version then is Conflict', async () => {
    const read = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    if (!read) throw new Error('m-a not found');
    const target = { namespace, name: 'm-a', resourceVersion: read.metadata.resourceVersion };
    const written = await adapter.writer.patchStatus('TerraformMachine', target, {
      activeJob: {
        name: 'captf-m-m-a-apply-a1-abcdef',
        op: 'apply',
        attempt: 1,
        startedAt: '2026-11-29T12:00:00Z',
      },
    });
    expect(written.status).toMatchObject({ activeJob: { name: 'captf-m-m-a-apply-a1-abcdef' } });
    expect(written.metadata.resourceVersion).not.toBe(read.metadata.resourceVersion);
    const stale = await rejectionOf(
      adapter.writer.patchStatus('TerraformMachine', target, { activeJob: null }),
    );
    expect([stale.code, stale.httpStatus, stale.outcome]).toEqual(['Conflict', 409, 'rejected']);
    const after = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    expect(after?.status).toMatchObject({ activeJob: { op: 'apply' } });
  });

  it('a status replace removes absent fields; a stale replace is Conflict', async () => {
    const read = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    if (!read) throw new Error('m-a not found');
    const replaced = await adapter.writer.replaceStatus('TerraformMachine', {
      ...read,
      status: { waitReason: 'WaitingForJobSlot' },
    });
    expect(replaced.status).toEqual({ waitReason: 'WaitingForJobSlot' });
    const stale = await rejectionOf(
      adapter.writer.replaceStatus('TerraformMachine', { ...read, status: {} }),
    );
    expect(stale.code).toBe('Conflict');
  });

  it('a status value outside the CRD schema is Invalid (422): rejected, nothing written', async () => {
    const read = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    if (!read) throw new Error('m-a not found');
    const target = { namespace, name: 'm-a', resourceVersion: read.metadata.resourceVersion };
    const error = await rejectionOf(
      adapter.writer.patchStatus('TerraformMachine', target, { waitReason: 'NotAReason' }),
    );
    expect([error.code, error.outcome]).toEqual(['Invalid', 'rejected']);
    const after = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    expect(after?.metadata.resourceVersion).toBe(read.metadata.resourceVersion);
  });

  it('finalizers and labels are patched under the precondition; a stale one is Conflict', async () => {
    const read = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    if (!read) throw new Error('m-a not found');
    const target = { namespace, name: 'm-a', resourceVersion: read.metadata.resourceVersion };
    const patched = await adapter.writer.patchCustomMetadata('TerraformMachine', target, {
      finalizers: ['infrastructure.cluster.x-k8s.io/captf'],
      labels: { 'captf.io/test': 'yes' },
    });
    expect(patched.metadata.finalizers).toEqual(['infrastructure.cluster.x-k8s.io/captf']);
    expect(patched.metadata.labels).toMatchObject({ 'captf.io/test': 'yes' });
    const stale = await rejectionOf(
      adapter.writer.patchCustomMetadata('TerraformMachine', target, { finalizers: [] }),
    );
    expect(stale.code).toBe('Conflict');
    const cleared = await adapter.writer.patchCustomMetadata(
      'TerraformMachine',
      { ...target, resourceVersion: patched.metadata.resourceVersion },
      { finalizers: [], labels: { 'captf.io/test': null } },
    );
    expect(cleared.metadata.finalizers).toBeUndefined();
    expect(cleared.metadata.labels?.['captf.io/test']).toBeUndefined();
    expect(created.metadata.uid).toBe(cleared.metadata.uid);
  });

  it('the Cluster API contract fields in spec are patched under the precondition; a stale one is Conflict', async () => {
    const read = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    if (!read) throw new Error('m-a not found');
    const target = { namespace, name: 'm-a', resourceVersion: read.metadata.resourceVersion };
    const patched = await adapter.writer.patchSpec('TerraformMachine', target, {
      providerID: 'captf://team-a/m-a',
    });
    expect(patched.spec).toMatchObject({
      providerID: 'captf://team-a/m-a',
      source: { image: 'registry.invalid/module:1' },
    });
    const stale = await rejectionOf(
      adapter.writer.patchSpec('TerraformMachine', target, { providerID: 'other' }),
    );
    expect(stale.code).toBe('Conflict');
  });

  it('a Job is marked bookkept under the precondition; a stale mark is Conflict', async () => {
    const job = await adapter.writer.createJob(jobNamed('to-bookkeep'));
    const resourceVersion = job.metadata?.resourceVersion ?? '';
    // Wait until the Job controller has stopped writing the new Job, so the precondition is ours to lose.
    const settled = await eventually(
      () => adapter.reader.getJob(namespace, 'to-bookkeep'),
      (current) => current?.status?.startTime !== undefined,
    );
    const target = {
      namespace,
      name: 'to-bookkeep',
      resourceVersion: settled?.metadata?.resourceVersion ?? '',
    };
    const marked = await adapter.writer.patchJobMetadata(target, { labels: { 'captf.io/bookkept': 'true' } });
    expect(marked.metadata?.labels?.['captf.io/bookkept']).toBe('true');
    const stale = await rejectionOf(
      adapter.writer.patchJobMetadata(
        { ...target, resourceVersion },
        { labels: { 'captf.io/bookkept': 'true' } },
      ),
    );
    expect(stale.code).toBe('Conflict');
  });
});

describe('lists', () => {
  it('follow continue tokens: 7 Secrets with page size 3 come back whole, in 3 requests', async () => {
    const selector = { 'captf.io/page-test': 'secrets' };
    for (let index = 0; index < 7; index += 1) {
      await adapter.writer.createSecret({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `page-${index}`, namespace, labels: selector },
        stringData: { config: 'not-a-secret' },
      });
    }
    adapter.takeRequestCounts();
    const secrets = await adapter.reader.listSecrets({ namespace, labelSelector: selector });
    expect(secrets.map((secret) => secret.metadata?.name).sort()).toEqual(
      Array.from({ length: 7 }, (_, index) => `page-${index}`),
    );
    expect(adapter.takeRequestCounts()).toEqual({ total: 3, byRequest: { 'list secrets': 3 } });
  });

  it('follow continue tokens for our kinds and for Jobs, across all namespaces too', async () => {
    for (let index = 0; index < 5; index += 1) {
      await adapter.writer.createCustomObject(
        'TerraformMachine',
        machine(`page-${index}`, { 'captf.io/page': 'yes' }),
      );
      await adapter.writer.createJob(jobNamed(`page-${index}`, { 'captf.io/page': 'yes' }));
    }
    const machines = await adapter.reader.listCustomObjects('TerraformMachine', {
      namespace,
      labelSelector: { 'captf.io/page': 'yes' },
    });
    expect(machines).toHaveLength(5);
    const everywhere = await adapter.reader.listCustomObjects('TerraformMachine', {
      labelSelector: 'captf.io/page=yes',
    });
    expect(everywhere.filter((item) => item.metadata.namespace === namespace)).toHaveLength(5);
    const jobs = await adapter.reader.listJobs({ namespace, labelSelector: { 'captf.io/page': 'yes' } });
    expect(jobs.map((job) => job.metadata?.name).sort()).toEqual(
      [0, 1, 2, 3, 4].map((index) => `page-${index}`),
    );
    const unmarked = await adapter.reader.listJobs({
      namespace,
      labelSelector: 'captf.io/page=yes,!captf.io/bookkept',
    });
    expect(unmarked).toHaveLength(5);
  });
});

describe('deletes', () => {
  it('C13: a deleted Job takes its pods with it (Background propagation, garbage collector)', async () => {
    await adapter.writer.createJob(jobNamed('pruned'));
    const selector = { namespace, labelSelector: { 'batch.kubernetes.io/job-name': 'pruned' } };
    const pods = await eventually(
      () => adapter.reader.listPods(selector),
      (found) => found.length > 0,
    );
    expect(pods.length).toBeGreaterThan(0);
    expect(await adapter.writer.deleteJob(namespace, 'pruned')).toBe('deleted');
    const left = await eventually(
      () => adapter.reader.listPods(selector),
      (found) => found.length === 0,
    );
    expect(left).toEqual([]);
    expect(await adapter.reader.getJob(namespace, 'pruned')).toBeUndefined();
  });

  it('a uid precondition deletes only that incarnation of a name', async () => {
    const first = await adapter.writer.createJob(jobNamed('incarnation'));
    await adapter.writer.deleteJob(namespace, 'incarnation');
    await eventually(
      () => adapter.reader.getJob(namespace, 'incarnation'),
      (job) => job === undefined,
    );
    const second = await adapter.writer.createJob(jobNamed('incarnation'));
    const error = await rejectionOf(
      adapter.writer.deleteJob(namespace, 'incarnation', { uid: first.metadata?.uid }),
    );
    expect(error.code).toBe('Conflict');
    expect((await adapter.reader.getJob(namespace, 'incarnation'))?.metadata?.uid).toBe(second.metadata?.uid);
  });
});

describe('events', () => {
  it('a repeated transition emits one Event (deterministic name; AlreadyExists = emitted)', async () => {
    const target = await adapter.writer.createCustomObject('TerraformMachine', machine('evented'));
    const event = {
      regarding: {
        apiVersion: OUR_API_VERSION,
        kind: 'TerraformMachine',
        namespace,
        name: 'evented',
        uid: target.metadata.uid,
      },
      type: 'Normal' as const,
      reason: 'JobSucceeded' as const,
      action: 'Bookkeep',
      note: 'Job captf-m-evented-apply-a1-abcdef succeeded',
      transitionKey: 'captf-m-evented-apply-a1-abcdef',
    };
    expect(await adapter.writer.emitEvent(event)).toBe('created');
    expect(await adapter.writer.emitEvent(event)).toBe('already-emitted');
    expect(
      await adapter.writer.emitEvent({ ...event, transitionKey: 'captf-m-evented-apply-a2-123456' }),
    ).toBe('created');
    const events = await config.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
    const ours = events.items.filter((item) => item.regarding?.uid === target.metadata.uid);
    expect(ours).toHaveLength(2);
    expect(
      ours.every(
        (item) => item.reason === 'JobSucceeded' && item.reportingController === reporter.controller,
      ),
    ).toBe(true);
  });
});

describe('request counter', () => {
  it('counts every request by verb and resource; take() returns the counts and resets them', async () => {
    adapter.takeRequestCounts();
    await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    await adapter.reader.listJobs({ namespace, labelSelector: { 'captf.io/none': 'x' } });
    await adapter.reader.listPods({ namespace, labelSelector: { 'captf.io/none': 'x' } });
    const read = await adapter.reader.getCustomObject('TerraformMachine', namespace, 'm-a');
    if (!read) throw new Error('m-a not found');
    await adapter.writer.patchStatus(
      'TerraformMachine',
      { namespace, name: 'm-a', resourceVersion: read.metadata.resourceVersion },
      { waitReason: 'WaitingForRunLease' },
    );
    await adapter.writer.deleteSecret(namespace, 'never-created');
    expect(adapter.requestCounts().total).toBe(6);
    expect(adapter.takeRequestCounts()).toEqual({
      total: 6,
      byRequest: {
        'delete secrets': 1,
        'get terraformmachines': 2,
        'list jobs': 1,
        'list pods': 1,
        'patch terraformmachines/status': 1,
      },
    });
    expect(adapter.requestCounts()).toEqual({ total: 0, byRequest: {} });
  });
});

describe('per-request timeout', () => {
  let hung: Server;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    // An endpoint that accepts connections and never answers: an API server that hangs.
    hung = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => hung.close(resolve));
  });

  function adapterAt(server: string): KubeAdapter {
    const pointed = new KubeConfig();
    pointed.loadFromOptions({
      clusters: [{ name: 'c', server, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'none' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return createKubeAdapter({
      source: { kind: 'loaded', config: pointed },
      clock,
      reporter,
      requestTimeoutMs: 300,
    });
  }

  it('a request that gets no answer fails with Timeout within the budget: outcome unknown', async () => {
    const address = hung.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const slow = adapterAt(`http://127.0.0.1:${address.port}`);
    const started = performance.now();
    const error = await rejectionOf(slow.writer.createJob(jobNamed('never')));
    expect([error.code, error.outcome, error.outage, error.httpStatus]).toEqual([
      'Timeout',
      'unknown',
      true,
      undefined,
    ]);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('an answer whose body never ends fails with Timeout too: the timeout covers reading the body', async () => {
    const stalling = createHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"kind":');
    });
    await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
    try {
      const address = stalling.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      const error = await rejectionOf(
        adapterAt(`http://127.0.0.1:${address.port}`).reader.getJob(namespace, 'x'),
      );
      expect([error.code, error.outcome]).toEqual(['Timeout', 'unknown']);
    } finally {
      stalling.closeAllConnections();
      await new Promise((resolve) => stalling.close(resolve));
    }
  });

  it('an unreachable API server is Unavailable: outcome unknown', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    await new Promise((resolve) => probe.close(resolve));
    if (address === null || typeof address === 'string') throw new Error('no port');
    const error = await rejectionOf(
      adapterAt(`http://127.0.0.1:${address.port}`).reader.getJob(namespace, 'x'),
    );
    expect([error.code, error.outcome]).toEqual(['Unavailable', 'unknown']);
  });
});

describe('connection', () => {
  it('reads the CA once per connection but the credential on every request (an exec plugin rotating its token)', async () => {
    const dir = testTempDir('captf-kube-connection-');
    const cluster = config.getCurrentCluster();
    const token = config.getCurrentUser()?.token;
    if (!cluster?.caFile || token === undefined) throw new Error('the test stack has a CA file and a token');
    const caFile = join(dir, 'ca.crt');
    const tokenFile = join(dir, 'token');
    writeFileSync(caFile, readFileSync(cluster.caFile));
    writeFileSync(tokenFile, token);
    const rotating = new KubeConfig();
    rotating.loadFromOptions({
      clusters: [{ name: 'c', server: cluster.server, caFile }],
      users: [
        {
          name: 'u',
          // Expired as soon as issued: client-node runs the plugin again for every request.
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: 'sh',
            args: [
              '-c',
              `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2000-01-01T00:00:00Z"}}' "$(cat ${tokenFile})"`,
            ],
          },
        },
      ],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const connected = createKubeAdapter({ source: { kind: 'loaded', config: rotating }, clock, reporter });
    expect(await connected.reader.getJob(namespace, 'absent')).toBeUndefined();
    // A CA file read per request would now fail every request.
    rmSync(caFile);
    expect(await connected.reader.getJob(namespace, 'absent')).toBeUndefined();
    writeFileSync(tokenFile, 'rotated-away');
    const refused = await rejectionOf(connected.reader.getJob(namespace, 'absent'));
    expect(refused.code).toBe('Unauthorized');
    writeFileSync(tokenFile, token);
    expect(await connected.reader.getJob(namespace, 'absent')).toBeUndefined();
  });
});
