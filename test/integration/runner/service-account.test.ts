import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { buildRunnerIdentity } from '../../../src/core/runner-identity.ts';
import { nameStateSuffix } from '../../../src/core/state-identity.ts';
import { startKubeProxy } from '../../../src/runner/kube-proxy.ts';
import { ensureRunnerIdentity } from '../../../src/step/runner-identity.ts';
import { testStack } from '../../env/index.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import { runRunner, stepNames } from './runner-process.ts';

// Issue 16 item 3: a runner pod reaches only its own object's state. Its ServiceAccount's Role names one
// state Secret and one lock Lease (`resourceNames`, verbs get and update); the runner's loopback proxy
// (src/runner/kube-proxy.ts) answers OpenTofu's Secret list on `init` from a read of that one Secret.
// Real runner, real tofu, the controller's default backend (`in_cluster_config: true`), and the kubelet's
// variables and service-account files pointing at the test API server.

const run = promisify(execFile);
const kubectl = async (args: string[], stdin?: string): Promise<string> => {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (stdin !== undefined) child.child.stdin?.end(stdin);
  return (await child).stdout;
};
const apply = (manifest: object) => kubectl(['apply', '-f', '-'], JSON.stringify(manifest));

const id = randomUUID().slice(0, 8);
const NAMESPACE = `captf-sa-${id}`;
/** Objects A and B: TerraformMachines, so the garbage collector keeps what their identities own. */
const OBJECT_A = `obj-a-${id}`;
const OBJECT_B = `obj-b-${id}`;
const SUFFIX = nameStateSuffix('TerraformMachine', OBJECT_A);
const STATE_SECRET = `tfstate-default-${SUFFIX}`;
const LOCK_LEASE = `lock-tfstate-default-${SUFFIX}`;
/** Another object's state in the same namespace, which object A's ServiceAccount may not touch. */
const OTHER_SECRET = `tfstate-default-${nameStateSuffix('TerraformMachine', OBJECT_B)}`;
let serviceAccount = '';

let token = '';
let serviceAccountDir = '';

/** What the kubelet gives a pod: the API server's address; the test API server stands in for it. */
function kubeletEnv(): Record<string, string> {
  const url = new URL(testStack().apiServerUrl);
  return { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port };
}

/** A GET against the test API server as object A's ServiceAccount; the status code only. */
function getAsServiceAccount(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    readFile(testStack().caPath, 'utf8').then((ca) => {
      const req = request(`${testStack().apiServerUrl}${path}`, {
        ca,
        headers: { authorization: `Bearer ${token}` },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    }, reject);
  });
}

beforeAll(async () => {
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  // Each object's identity exactly as the controller puts it in place (src/core/runner-identity.ts).
  const admin = createKubeAdapter({
    source: { kind: 'file', path: testStack().kubeconfigPath },
    clock: systemClock,
    reporter: { controller: 'captf.io/controller', instance: 'service-account-test' },
  });
  for (const name of [OBJECT_A, OBJECT_B]) {
    const created = JSON.parse(
      await kubectl(
        ['create', '-o', 'json', '-f', '-'],
        JSON.stringify({
          apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
          kind: 'TerraformMachine',
          metadata: { name, namespace: NAMESPACE },
          spec: { source: { image: 'registry.example.com/modules/m:1' } },
        }),
      ),
    ) as { metadata: { uid: string } };
    const identity = buildRunnerIdentity({
      owner: {
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'TerraformMachine',
        name,
        namespace: NAMESPACE,
        uid: created.metadata.uid,
      },
      source: {
        backend: undefined,
        namespace: NAMESPACE,
        stateSuffix: nameStateSuffix('TerraformMachine', name),
      },
    });
    await ensureRunnerIdentity(admin, identity);
    if (name === OBJECT_A) serviceAccount = identity.serviceAccount.metadata.name;
  }
  // The TokenRequest API, as the kubelet's projected service-account volume uses it.
  token = (await kubectl(['create', 'token', serviceAccount, '-n', NAMESPACE, '--duration=1h'])).trim();
  serviceAccountDir = testTempDir('captf-sa-');
  await writeFile(join(serviceAccountDir, 'token'), `${token}\n`, { mode: 0o600 });
  await writeFile(join(serviceAccountDir, 'ca.crt'), await readFile(testStack().caPath));
});

afterAll(async () => {
  await kubectl(['delete', 'namespace', NAMESPACE, '--wait=false']);
});

/** The controller's default backend for object A (src/core/run-secret-manifest.ts buildRunConfig). */
const backend = {
  type: 'kubernetes',
  config: { secret_suffix: SUFFIX, namespace: NAMESPACE, in_cluster_config: true },
};

/** A Secret's resourceVersion: unchanged means nobody wrote it. */
const versionOf = (name: string) =>
  kubectl(['get', 'secret', name, '-n', NAMESPACE, '-o', 'jsonpath={.metadata.resourceVersion}']);

/** The bytes of a Secret's data, decoded: what the runner reports as its state's size. */
async function dataBytesOf(name: string): Promise<number> {
  const secret = JSON.parse(await kubectl(['get', 'secret', name, '-n', NAMESPACE, '-o', 'json'])) as {
    data?: Record<string, string>;
  };
  return Object.values(secret.data ?? {}).reduce(
    (sum, value) => sum + Buffer.from(value, 'base64').length,
    0,
  );
}

async function stateOf(name: string): Promise<{ resources: unknown[] } | undefined> {
  const secret = JSON.parse(await kubectl(['get', 'secret', name, '-n', NAMESPACE, '-o', 'json'])) as {
    data?: { tfstate?: string };
  };
  const data = secret.data?.tfstate;
  if (data === undefined) return undefined;
  return JSON.parse(gunzipSync(Buffer.from(data, 'base64')).toString('utf8'));
}

describe('a runner pod reaches only its own state (issue 16 item 3)', () => {
  it('RBAC alone: the list tofu sends is forbidden, even named by a field selector; B is refused', async () => {
    const secrets = `/api/v1/namespaces/${NAMESPACE}/secrets`;
    expect(await getAsServiceAccount(`${secrets}?labelSelector=tfstate%3Dtrue`)).toBe(403);
    expect(await getAsServiceAccount(`${secrets}?fieldSelector=metadata.name%3D${STATE_SECRET}`)).toBe(403);
    expect(await getAsServiceAccount(`${secrets}/${STATE_SECRET}`)).toBe(200);
    expect(await getAsServiceAccount(`${secrets}/${OTHER_SECRET}`)).toBe(403);
  });

  it('apply then destroy with the in-cluster default backend, through the proxy: the state lands in the Secret', async () => {
    const call = {
      module: 'machine',
      env: kubeletEnv(),
      config: { variables: { name: 'm-a' }, backend },
    };
    const applied = await runRunner({
      ...call,
      flags: ['--op=apply', `--service-account-dir=${serviceAccountDir}`],
    });
    expect(applied.result.error).toBeUndefined();
    expect(applied.exitCode).toBe(0);
    expect(stepNames(applied.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json', 'apply']);
    expect(applied.stdout).toContain(`kubernetes backend through http://127.0.0.1:`);
    expect((await stateOf(STATE_SECRET))?.resources).toHaveLength(1);
    // The state as the backend left it, seen by the proxy on the backend's own requests: its size, and the
    // move label it lacks, so bookkeeping needs no read of its own.
    const appliedBytes = await dataBytesOf(STATE_SECRET);
    expect(appliedBytes).toBeGreaterThan(100);
    expect(applied.result.state).toEqual({ bytes: appliedBytes, moveLabel: false });
    // The lock was taken and released by update only: the Lease is there, without a holder.
    const lease = JSON.parse(await kubectl(['get', 'lease', LOCK_LEASE, '-n', NAMESPACE, '-o', 'json'])) as {
      spec: { holderIdentity?: string };
    };
    expect(lease.spec.holderIdentity).toBeUndefined();
    // The kubeconfig holds no credentials; the token never reaches the runner's output.
    const kubeconfig = await readFile(join(applied.dir, 'work', 'captf.kubeconfig'), 'utf8');
    expect(kubeconfig).not.toContain(token);
    expect(`${applied.stdout}${applied.stderr}`).not.toContain(token);

    // Cluster API's move label, added as bookkeeping adds it: OpenTofu's update keeps it, the proxy sees it.
    await kubectl(['label', 'secret', STATE_SECRET, '-n', NAMESPACE, 'clusterctl.cluster.x-k8s.io/move=']);
    const destroyed = await runRunner({
      ...call,
      flags: ['--op=destroy', `--service-account-dir=${serviceAccountDir}`],
    });
    expect(destroyed.result.error).toBeUndefined();
    expect(destroyed.result.result).toBe('succeeded');
    expect((await stateOf(STATE_SECRET))?.resources).toEqual([]);
    expect(destroyed.result.state).toEqual({ bytes: await dataBytesOf(STATE_SECRET), moveLabel: true });
    // Object B's state was never touched.
    expect(await stateOf(OTHER_SECRET)).toBeUndefined();
  });

  it("a spec pointing its backend at B's state gets the API server's Forbidden; B's state is untouched", async () => {
    const before = await versionOf(OTHER_SECRET);
    const pointed = await runRunner({
      module: 'machine',
      env: kubeletEnv(),
      config: {
        variables: { name: 'm-a' },
        backend: {
          ...backend,
          config: { ...backend.config, secret_suffix: nameStateSuffix('TerraformMachine', OBJECT_B) },
        },
      },
      flags: ['--op=apply', `--service-account-dir=${serviceAccountDir}`],
    });
    expect(pointed.exitCode).not.toBe(0);
    expect(pointed.result.error).toMatchObject({ kind: 'step', step: 'init' });
    expect(`${pointed.stdout}${pointed.stderr}`).toContain('forbidden');
    expect(await versionOf(OTHER_SECRET)).toBe(before);
  });

  it('a missing token: the run fails in prepare, naming the path; no runtime step runs', async () => {
    const empty = testTempDir('captf-sa-empty-');
    await writeFile(join(empty, 'ca.crt'), await readFile(testStack().caPath));
    const failed = await runRunner({
      module: 'machine',
      env: kubeletEnv(),
      config: { variables: { name: 'm-a' }, backend },
      flags: ['--op=apply', `--service-account-dir=${empty}`],
    });
    expect(failed.exitCode).toBe(1);
    expect(stepNames(failed.result)).toEqual(['prepare']);
    expect(failed.result.error).toEqual({
      kind: 'step',
      step: 'prepare',
      summary: `service account token ${join(empty, 'token')}: ENOENT`,
    });
  });
});

describe('the loopback proxy (src/runner/kube-proxy.ts)', () => {
  const scope = { namespace: NAMESPACE, secretName: STATE_SECRET };

  /** Who the API server says the caller is (SelfSubjectReview: a POST whose body streams through). */
  async function whoAmI(url: string, authorization?: string): Promise<string> {
    const res = await fetch(`${url}/apis/authentication.k8s.io/v1/selfsubjectreviews`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(authorization === undefined ? {} : { authorization }),
      },
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
    });
    const body = (await res.json()) as { status?: { userInfo?: { username?: string } } };
    return `${res.status} ${body.status?.userInfo?.username ?? ''}`;
  }

  it('acts as the service account whatever the caller sends; re-reads the token on every request', async () => {
    const dir = testTempDir('captf-sa-rotate-');
    await writeFile(join(dir, 'ca.crt'), await readFile(testStack().caPath));
    await writeFile(join(dir, 'token'), token);
    const logged: string[] = [];
    const started = await startKubeProxy({
      serviceAccountDir: dir,
      env: kubeletEnv(),
      scope,
      log: (text) => logged.push(text),
    });
    if (!started.ok) throw new Error(started.message);
    try {
      const sa = `system:serviceaccount:${NAMESPACE}:${serviceAccount}`;
      expect(await whoAmI(started.proxy.url)).toBe(`201 ${sa}`);
      // A caller's own credentials never pass: the admin token is replaced by the service account's.
      expect(await whoAmI(started.proxy.url, `Bearer ${testStack().adminToken}`)).toBe(`201 ${sa}`);
      // The kubelet rewrites the token file in place; the next request carries the new content.
      await writeFile(join(dir, 'token'), 'not-a-token');
      expect(await whoAmI(started.proxy.url)).toBe('401 ');
      expect(logged.some((line) => line.includes('answered 401'))).toBe(true);
      await writeFile(join(dir, 'token'), token);
      expect(await whoAmI(started.proxy.url)).toBe(`201 ${sa}`);
    } finally {
      await started.proxy.close();
    }
  });

  it("keeps what the state Secret's answers show of it, gzip'd ones too, and passes them on as they came", async () => {
    const dir = testTempDir('captf-sa-state-');
    await writeFile(join(dir, 'ca.crt'), await readFile(testStack().caPath));
    await writeFile(join(dir, 'token'), token);
    // Over the API server's 128 KiB threshold for compressing an answer the client accepts gzip'd.
    const data = randomBytes(200 * 1024);
    const patch = join(dir, 'patch.json');
    await writeFile(
      patch,
      JSON.stringify({
        metadata: { labels: { 'clusterctl.cluster.x-k8s.io/move': '' } },
        data: { tfstate: data.toString('base64') },
      }),
    );
    await kubectl([
      'patch',
      'secret',
      STATE_SECRET,
      '-n',
      NAMESPACE,
      '--type=merge',
      `--patch-file=${patch}`,
    ]);
    const started = await startKubeProxy({ serviceAccountDir: dir, env: kubeletEnv(), scope, log: () => {} });
    if (!started.ok) throw new Error(started.message);
    try {
      expect(started.proxy.stateSeen()).toBeUndefined();
      const answer = await fetch(
        `${started.proxy.url}/api/v1/namespaces/${NAMESPACE}/secrets/${STATE_SECRET}`,
        {
          headers: { 'accept-encoding': 'gzip' },
        },
      );
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-encoding')).toBe('gzip');
      const secret = (await answer.json()) as { data: { tfstate: string } };
      expect(Buffer.from(secret.data.tfstate, 'base64').equals(data)).toBe(true);
      expect(started.proxy.stateSeen()).toEqual({ bytes: data.length, moveLabel: true });
      // Another Secret's answer changes nothing it keeps (and is refused to this account anyway).
      await fetch(`${started.proxy.url}/api/v1/namespaces/${NAMESPACE}/secrets/${OTHER_SECRET}`);
      expect(started.proxy.stateSeen()).toEqual({ bytes: data.length, moveLabel: true });
    } finally {
      await started.proxy.close();
    }
  });

  it('a missing CA: the proxy does not start, and says which file', async () => {
    const dir = testTempDir('captf-sa-noca-');
    await writeFile(join(dir, 'token'), token);
    const started = await startKubeProxy({ serviceAccountDir: dir, env: kubeletEnv(), scope, log: () => {} });
    expect(started).toEqual({ ok: false, message: `service account CA ${join(dir, 'ca.crt')}: ENOENT` });
  });
});
