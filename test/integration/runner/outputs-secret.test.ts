import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { buildOutputsSecret } from '../../../src/core/outputs-secret.ts';
import { buildRunnerIdentity, runnerIdentityName } from '../../../src/core/runner-identity.ts';
import { nameStateSuffix } from '../../../src/core/state-identity.ts';
import { ensureOutputsSecret } from '../../../src/step/outputs-secret.ts';
import { ensureRunnerIdentity } from '../../../src/step/runner-identity.ts';
import { testStack } from '../../env/index.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import { type RunnerRun, runRunner, stepNames } from './runner-process.ts';

// Issue 24 item 3 with the real runner, real tofu and the real API server: every output of the module,
// sensitive ones included, lands in the object's outputs Secret, written by the runner as the object's own
// runner identity (its Role names that one Secret, `get` and `update`); another object's identity is
// refused it; the canary of the sensitive outputs appears in the runner's output and result nowhere.

const run = promisify(execFile);
const kubectl = async (args: string[], stdin?: string): Promise<string> => {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (stdin !== undefined) child.child.stdin?.end(stdin);
  return (await child).stdout;
};

const CANARY = 'tok-123-canary';
const id = randomUUID().slice(0, 8);
const NAMESPACE = `captf-outputs-${id}`;
const OBJECT_A = `obj-a-${id}`;
const OBJECT_B = `obj-b-${id}`;
const SECRET_A = `${OBJECT_A}-outputs`;
const SECRET_B = `${OBJECT_B}-outputs`;
const SUFFIX_A = nameStateSuffix('TerraformMachine', OBJECT_A);
const GROUP_VERSION = 'infrastructure.cluster.x-k8s.io/v1alpha1';

const tokens: Record<string, string> = {};
const uids: Record<string, string> = {};
let serviceAccountDirA = '';

/** What the kubelet gives a pod: the API server's address; the test API server stands in for it. */
function kubeletEnv(): Record<string, string> {
  const url = new URL(testStack().apiServerUrl);
  return { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port };
}

/** A request to the test API server as a ServiceAccount, by its token; the status code only. */
function statusAs(token: string, method: string, path: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    readFile(testStack().caPath, 'utf8').then((ca) => {
      const req = request(`${testStack().apiServerUrl}${path}`, {
        ca,
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(body);
    }, reject);
  });
}

/** A Secret as the admin reads it, data decoded. */
async function secretOf(name: string): Promise<{
  data: Record<string, string>;
  metadata: {
    resourceVersion: string;
    labels?: Record<string, string>;
    ownerReferences?: { uid: string; kind: string; controller?: boolean }[];
  };
}> {
  const secret = JSON.parse(await kubectl(['get', 'secret', name, '-n', NAMESPACE, '-o', 'json'])) as {
    data?: Record<string, string>;
    metadata: {
      resourceVersion: string;
      labels?: Record<string, string>;
      ownerReferences?: { uid: string; kind: string; controller?: boolean }[];
    };
  };
  const data = Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
  );
  return { data, metadata: secret.metadata };
}

beforeAll(async () => {
  await kubectl(['create', 'namespace', NAMESPACE]);
  const admin = createKubeAdapter({
    source: { kind: 'file', path: testStack().kubeconfigPath },
    clock: systemClock,
    reporter: { controller: 'captf.io/controller', instance: 'outputs-secret-test' },
  });
  for (const [name, secretName] of [
    [OBJECT_A, SECRET_A],
    [OBJECT_B, SECRET_B],
  ] as const) {
    const created = JSON.parse(
      await kubectl(
        ['create', '-o', 'json', '-f', '-'],
        JSON.stringify({
          apiVersion: GROUP_VERSION,
          kind: 'TerraformMachine',
          metadata: { name, namespace: NAMESPACE },
          spec: { source: { image: 'registry.example.com/modules/m:1' }, outputs: { secretName } },
        }),
      ),
    ) as { metadata: { uid: string } };
    uids[name] = created.metadata.uid;
    const owner = {
      apiVersion: GROUP_VERSION,
      kind: 'TerraformMachine' as const,
      name,
      namespace: NAMESPACE,
      uid: created.metadata.uid,
    };
    // What a start does, in its order: the outputs Secret, then the identity that may write it.
    const writer = runnerIdentityName(nameStateSuffix('TerraformMachine', name));
    expect(
      await ensureOutputsSecret(admin, buildOutputsSecret({ owner, secretName, writer }), owner.uid),
    ).toEqual({ kind: 'ours' });
    const identity = buildRunnerIdentity({
      owner,
      source: {
        backend: undefined,
        namespace: NAMESPACE,
        stateSuffix: nameStateSuffix('TerraformMachine', name),
        outputsSecretName: secretName,
      },
    });
    await ensureRunnerIdentity(admin, identity);
    tokens[name] = (
      await kubectl(['create', 'token', identity.serviceAccount.metadata.name, '-n', NAMESPACE])
    ).trim();
  }
  serviceAccountDirA = testTempDir('captf-outputs-sa-');
  await writeFile(join(serviceAccountDirA, 'token'), `${tokens[OBJECT_A]}\n`, { mode: 0o600 });
  await writeFile(join(serviceAccountDirA, 'ca.crt'), await readFile(testStack().caPath));
}, 60_000);

afterAll(async () => {
  await kubectl(['delete', 'namespace', NAMESPACE, '--wait=false']);
});

/** A run of object A's runner, as its Job runs it: the default backend and the outputs Secret. */
function runA(op: 'apply' | 'refresh', generation = 1): Promise<RunnerRun> {
  return runRunner({
    module: 'outputs-secret',
    env: kubeletEnv(),
    config: {
      kind: 'TerraformMachine',
      variables: { name: OBJECT_A, generation },
      backend: {
        type: 'kubernetes',
        config: { secret_suffix: SUFFIX_A, namespace: NAMESPACE, in_cluster_config: true },
      },
      outputsSecret: { namespace: NAMESPACE, name: SECRET_A },
    },
    flags: [`--op=${op}`, `--service-account-dir=${serviceAccountDirA}`],
  });
}

/** Polls `read` until `done` holds (the garbage collector works in the background); throws after 60 s. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`wait for ${what}: timed out`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The canary is nowhere the runner writes but the outputs Secret. */
function expectNoCanary(done: RunnerRun): void {
  for (const text of [done.resultText, done.stdout, done.stderr]) expect(text).not.toContain(CANARY);
}

describe('the outputs Secret (issue 24 item 3)', () => {
  it('an apply writes every output into it, sensitive ones included; the result lists only the names of the others', async () => {
    const applied = await runA('apply');
    expect(applied.result.error).toBeUndefined();
    expect(applied.exitCode).toBe(0);
    expect(stepNames(applied.result)).toEqual([
      'prepare',
      'init',
      'validate',
      'plan',
      'show-json',
      'apply',
      'output',
    ]);
    expect(applied.result.outputsSecret).toEqual({
      name: SECRET_A,
      outputs: ['endpoint', 'ports', 'providerID'],
    });
    expectNoCanary(applied);
    const secret = await secretOf(SECRET_A);
    expect(Object.keys(secret.data).sort()).toEqual([
      'admin_password',
      'endpoint',
      'kubeconfig',
      'ports',
      'providerID',
    ]);
    expect(secret.data.admin_password).toBe(`${CANARY}-password`);
    expect(JSON.parse(secret.data.kubeconfig ?? '')).toEqual({
      token: `${CANARY}-kube`,
      server: `https://${OBJECT_A}.example.com`,
    });
    expect(secret.data.ports).toBe('[80,443]');
    expect(secret.data.endpoint).toBe(`https://${OBJECT_A}-1.example.com`);
    expect(secret.data.providerID).toBe(applied.result.outputs?.providerID);
    // Still the object's, for the garbage collector.
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'TerraformMachine', uid: uids[OBJECT_A], controller: true }),
    ]);
    expect(secret.metadata.labels?.['captf.io/outputs-of']).toBe(OBJECT_A);
  });

  it("another object's runner identity is refused it; its own may read it", async () => {
    const path = `/api/v1/namespaces/${NAMESPACE}/secrets/${SECRET_A}`;
    const other = tokens[OBJECT_B] ?? '';
    expect(await statusAs(tokens[OBJECT_A] ?? '', 'GET', path)).toBe(200);
    expect(await statusAs(other, 'GET', path)).toBe(403);
    const overwrite = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: SECRET_A, namespace: NAMESPACE },
      stringData: { admin_password: 'taken' },
    });
    expect(await statusAs(other, 'PUT', path, overwrite)).toBe(403);
    expect(await statusAs(other, 'DELETE', path)).toBe(403);
    // B's own outputs Secret is B's to read, never A's.
    expect(await statusAs(other, 'GET', `/api/v1/namespaces/${NAMESPACE}/secrets/${SECRET_B}`)).toBe(200);
    expect(
      await statusAs(tokens[OBJECT_A] ?? '', 'GET', `/api/v1/namespaces/${NAMESPACE}/secrets/${SECRET_B}`),
    ).toBe(403);
  });

  it('a refresh writes it again: a key removed by hand comes back; unchanged outputs are not written', async () => {
    await kubectl([
      'patch',
      'secret',
      SECRET_A,
      '-n',
      NAMESPACE,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/data/admin_password"}]',
    ]);
    const refreshed = await runA('refresh');
    expect(refreshed.result.error).toBeUndefined();
    expect(stepNames(refreshed.result)).toEqual(['prepare', 'init', 'apply-refresh-only', 'output']);
    expectNoCanary(refreshed);
    expect((await secretOf(SECRET_A)).data.admin_password).toBe(`${CANARY}-password`);
    // Nothing changed since: the next refresh reads the Secret and writes nothing.
    const version = (await secretOf(SECRET_A)).metadata.resourceVersion;
    const again = await runA('refresh');
    expect(again.result.outputsSecret).toEqual({
      name: SECRET_A,
      outputs: ['endpoint', 'ports', 'providerID'],
    });
    expect(again.stdout).toContain(
      `outputs Secret ${SECRET_A}: 5 outputs, 3 not sensitive, unchanged, not written`,
    );
    expect((await secretOf(SECRET_A)).metadata.resourceVersion).toBe(version);
  });

  it('a Secret that is gone fails the run at output, naming it and the status only; the apply itself stood', async () => {
    await kubectl(['delete', 'secret', SECRET_A, '-n', NAMESPACE]);
    const applied = await runA('apply', 2);
    expect(applied.exitCode).toBe(1);
    expect(applied.result).toMatchObject({
      result: 'failed',
      error: { kind: 'step', step: 'output', summary: `get Secret ${NAMESPACE}/${SECRET_A}: 404 NotFound` },
    });
    expect(applied.result.steps.map((s) => `${s.name}:${s.exit}`)).toContain('apply:0');
    expectNoCanary(applied);
  });

  it('deleting the object deletes its outputs Secret (the garbage collector, by its owner reference)', async () => {
    await kubectl(['create', 'secret', 'generic', SECRET_A, '-n', NAMESPACE]).catch(() => '');
    const owner = {
      apiVersion: GROUP_VERSION,
      kind: 'TerraformMachine' as const,
      name: OBJECT_B,
      namespace: NAMESPACE,
      uid: uids[OBJECT_B] ?? '',
    };
    const admin = createKubeAdapter({
      source: { kind: 'file', path: testStack().kubeconfigPath },
      clock: systemClock,
      reporter: { controller: 'captf.io/controller', instance: 'outputs-secret-test' },
    });
    // A Secret of that name that is not B's is never B's outputs Secret.
    expect(
      await ensureOutputsSecret(
        admin,
        buildOutputsSecret({ owner, secretName: SECRET_A, writer: 'captf-runner-b' }),
        owner.uid,
      ),
    ).toMatchObject({ kind: 'foreign' });
    await kubectl(['delete', 'terraformmachine', OBJECT_B, '-n', NAMESPACE, '--wait=false']);
    await eventually(
      () => kubectl(['get', 'secret', SECRET_B, '-n', NAMESPACE, '--ignore-not-found', '-o', 'name']),
      (found) => found.trim() === '',
      `${SECRET_B} deleted with ${OBJECT_B}`,
    );
  });
});
