import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { buildOutputsSecret } from '../../../src/core/outputs-secret.ts';
import { buildRunnerIdentity, type RunnerIdentity } from '../../../src/core/runner-identity.ts';
import { nameStateSuffix } from '../../../src/core/state-identity.ts';
import { ensureOutputsSecret } from '../../../src/step/outputs-secret.ts';
import { ensureRunnerIdentity } from '../../../src/step/runner-identity.ts';
import { CONTROLLER_USER, controllerAdapter } from '../../env/impersonation.ts';
import { testStack } from '../../env/index.ts';

// Issue 16 item 3 on the real API server: the controller's ServiceAccount (impersonated, bound only to the
// shipped ClusterRole, held by infra/admission/controller-runner-identity-policy.yaml) puts each object's
// runner identity in place, and the runner identity of object A is refused B's state Secret, lock Lease,
// plan key and per-run Secret, and any list or create.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const namespace = `identity-${randomBytes(3).toString('hex')}`;
const GROUP = 'infrastructure.cluster.x-k8s.io';

async function kubectl(args: string[], input?: string): Promise<string> {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/** Runs kubectl as `user` in the test namespace; its error text, or '' when it succeeded. */
async function errorAs(user: string, args: string[], input?: string): Promise<string> {
  try {
    await kubectl(['--as', user, '-n', namespace, ...args], input);
    return '';
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
}

/** The authorizer's verdict (SubjectAccessReview) for a service account on one named object. */
async function allowed(user: string, verb: string, resource: string, name?: string): Promise<boolean> {
  const [plural = '', group = ''] = resource.split('.', 2);
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      resourceAttributes: {
        namespace,
        verb,
        resource: plural,
        group: resource.includes('.') ? resource.slice(plural.length + 1) : group,
        ...(name ? { name } : {}),
      },
    },
  };
  return (
    (await kubectl(['create', '-f', '-', '-o', 'jsonpath={.status.allowed}'], JSON.stringify(review))) ===
    'true'
  );
}

/**
 * Creates a TerraformMachine (an owner the garbage collector finds) and returns its identity; with
 * `outputsSecretName`, the identity of a spec naming that outputs Secret.
 */
async function machine(name: string, outputsSecretName?: string): Promise<RunnerIdentity> {
  const created = JSON.parse(
    await kubectl(
      ['create', '-o', 'json', '-f', '-'],
      JSON.stringify({
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'TerraformMachine',
        metadata: { name, namespace },
        spec: { source: { image: 'registry.example.com/modules/m:1' } },
      }),
    ),
  ) as { metadata: { uid: string } };
  return buildRunnerIdentity({
    owner: {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'TerraformMachine',
      name,
      namespace,
      uid: created.metadata.uid,
    },
    source: {
      backend: undefined,
      namespace,
      stateSuffix: nameStateSuffix('TerraformMachine', name),
      ...(outputsSecretName ? { outputsSecretName } : {}),
    },
  });
}

const account = (identity: RunnerIdentity) =>
  `system:serviceaccount:${namespace}:${identity.serviceAccount.metadata.name}`;

let controller: KubeAdapter;
let a: RunnerIdentity;
let b: RunnerIdentity;

beforeAll(async () => {
  for (const file of ['namespace.yaml', 'rbac/controller.yaml']) {
    await kubectl(['apply', '-f', join(root, 'infra', file)]);
  }
  await kubectl(['create', 'namespace', namespace]);
  controller = controllerAdapter('runner-identity-test');
  // The policy (installed with the CRDs) takes effect once the API server compiled it: probe with a write
  // it must refuse.
  const deadline = Date.now() + 60_000;
  const probe = JSON.stringify({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'probe', namespace },
  });
  for (;;) {
    const error = await errorAs(CONTROLLER_USER, ['create', '--dry-run=server', '-f', '-'], probe);
    if (error.includes('captf-controller-runner-identities')) break;
    if (Date.now() > deadline) throw new Error(`the runner identity policy is not enforced: ${error}`);
    await sleep(500);
  }
  a = await machine('m-a');
  b = await machine('m-b');
}, 120_000);

describe('the controller puts a runner identity in place', () => {
  it('with its own rights, in one pass, then costs two reads per Job (its RoleBinding and its lock Lease)', async () => {
    controller.takeRequestCounts();
    expect(await ensureRunnerIdentity(controller, a)).toBe('written');
    expect(controller.takeRequestCounts().total).toBe(6);
    expect(await ensureRunnerIdentity(controller, a)).toBe('in-place');
    expect(controller.takeRequestCounts()).toMatchObject({
      total: 2,
      byRequest: { 'get rolebindings': 1, 'get leases': 1 },
    });
    expect(await ensureRunnerIdentity(controller, b)).toBe('written');
    const secret = JSON.parse(
      await kubectl(['-n', namespace, 'get', 'secret', 'tfstate-default-m-m-a', '-o', 'json']),
    );
    expect(secret.data).toBeUndefined();
    expect(secret.metadata.labels).toMatchObject({ tfstate: 'true', tfstateSecretSuffix: 'm-m-a' });
    const lease = JSON.parse(
      await kubectl(['-n', namespace, 'get', 'lease', 'lock-tfstate-default-m-m-a', '-o', 'json']),
    );
    expect(lease.spec.holderIdentity).toBeUndefined();
  });

  it('finishes what a step that died half-way left, and keeps state that is already there', async () => {
    const c = await machine('m-c');
    await kubectl(['-n', namespace, 'create', 'serviceaccount', c.serviceAccount.metadata.name]);
    await kubectl([
      '-n',
      namespace,
      'create',
      'secret',
      'generic',
      'tfstate-default-m-m-c',
      '--from-literal=tfstate=kept',
    ]);
    expect(await ensureRunnerIdentity(controller, c)).toBe('written');
    expect(
      await kubectl([
        '-n',
        namespace,
        'get',
        'secret',
        'tfstate-default-m-m-c',
        '-o',
        'jsonpath={.data.tfstate}',
      ]),
    ).toBe(Buffer.from('kept').toString('base64'));
    const owners = await kubectl([
      '-n',
      namespace,
      'get',
      'serviceaccount',
      c.serviceAccount.metadata.name,
      '-o',
      'jsonpath={.metadata.ownerReferences[0].uid}',
    ]);
    expect(owners).toBe(c.serviceAccount.metadata.ownerReferences?.[0]?.uid);
    expect(await ensureRunnerIdentity(controller, c)).toBe('in-place');
  });
  it('the lock Lease is owned by its state Secret and goes with it (a move deletes the source Secret, never the Lease)', async () => {
    const e = await machine('m-e');
    expect(await ensureRunnerIdentity(controller, e)).toBe('written');
    const secretUid = await kubectl([
      '-n',
      namespace,
      'get',
      'secret',
      'tfstate-default-m-m-e',
      '-o',
      'jsonpath={.metadata.uid}',
    ]);
    const owner = await kubectl([
      '-n',
      namespace,
      'get',
      'lease',
      'lock-tfstate-default-m-m-e',
      '-o',
      'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].uid}',
    ]);
    expect(owner).toBe(`Secret/${secretUid}`);
    await kubectl(['-n', namespace, 'delete', 'secret', 'tfstate-default-m-m-e']);
    let left = 'lease';
    for (let i = 0; i < 60 && left !== ''; i += 1) {
      left = (
        await kubectl([
          '-n',
          namespace,
          'get',
          'lease',
          'lock-tfstate-default-m-m-e',
          '--ignore-not-found',
          '-o',
          'name',
        ])
      ).trim();
      if (left !== '') await sleep(500);
    }
    expect(left).toBe('');
  });

  it('an identity in place always gets its deleted lock Lease back, and its state Secret only when the start asks (issue 23 item 8)', async () => {
    const d = await machine('m-d');
    expect(await ensureRunnerIdentity(controller, d)).toBe('written');
    await kubectl(['-n', namespace, 'delete', 'secret', 'tfstate-default-m-m-d']);
    // The Lease is owned by its Secret, so the garbage collector may have taken it already; a manual
    // unlock deletes it by hand too.
    await kubectl(['-n', namespace, 'delete', 'lease', 'lock-tfstate-default-m-m-d', '--ignore-not-found']);
    // The normal start reads the RoleBinding and the Lease it grants: the Lease (it holds nothing) comes
    // back, after a read of the Secret that would own it; the state's loss is the planner's to judge.
    controller.takeRequestCounts();
    expect(await ensureRunnerIdentity(controller, d)).toBe('written');
    expect(controller.takeRequestCounts().byRequest).toEqual({
      'get rolebindings': 1,
      'get leases': 1,
      'get secrets': 1,
      'create leases': 1,
    });
    const leaseOnly = await kubectl([
      '-n',
      namespace,
      'get',
      'secret,lease',
      '--ignore-not-found',
      '-o',
      'name',
    ]);
    expect(leaseOnly).not.toContain('secret/tfstate-default-m-m-d');
    expect(leaseOnly).toContain('lease.coordination.k8s.io/lock-tfstate-default-m-m-d');
    controller.takeRequestCounts();
    expect(await ensureRunnerIdentity(controller, d)).toBe('in-place');
    expect(controller.takeRequestCounts().byRequest).toEqual({ 'get rolebindings': 1, 'get leases': 1 });
    expect(await ensureRunnerIdentity(controller, d, { restoreStateSecret: 'unprovisioned' })).toBe(
      'written',
    );
    const back = await kubectl(['-n', namespace, 'get', 'secret,lease', '-o', 'name']);
    expect(back).toContain('secret/tfstate-default-m-m-d');
    expect(back).toContain('lease.coordination.k8s.io/lock-tfstate-default-m-m-d');
  });
});

describe("object A's runner identity reaches only A's state", () => {
  it('may get and update its own state Secret and lock Lease', async () => {
    expect(await allowed(account(a), 'get', 'secrets', 'tfstate-default-m-m-a')).toBe(true);
    expect(await allowed(account(a), 'update', 'secrets', 'tfstate-default-m-m-a')).toBe(true);
    expect(await allowed(account(a), 'get', 'leases.coordination.k8s.io', 'lock-tfstate-default-m-m-a')).toBe(
      true,
    );
    expect(
      await allowed(account(a), 'update', 'leases.coordination.k8s.io', 'lock-tfstate-default-m-m-a'),
    ).toBe(true);
    expect(await errorAs(account(a), ['get', 'secret', 'tfstate-default-m-m-a'])).toBe('');
  });

  it.each([
    { what: "B's state Secret", verb: 'get', resource: 'secrets', name: 'tfstate-default-m-m-b' },
    { what: "B's state Secret (write)", verb: 'update', resource: 'secrets', name: 'tfstate-default-m-m-b' },
    {
      what: "B's lock Lease",
      verb: 'update',
      resource: 'leases.coordination.k8s.io',
      name: 'lock-tfstate-default-m-m-b',
    },
    { what: "B's plan key", verb: 'get', resource: 'secrets', name: 'captf-plan-key-m-m-b' },
    {
      what: "B's per-run Secret",
      verb: 'get',
      resource: 'secrets',
      name: 'captf-run-captf-m-m-b-apply-a1-abcdef',
    },
    { what: 'any Secret by list', verb: 'list', resource: 'secrets' },
    { what: 'a new Lease', verb: 'create', resource: 'leases.coordination.k8s.io' },
    {
      what: 'its own Role (update)',
      verb: 'update',
      resource: 'roles.rbac.authorization.k8s.io',
      name: 'captf-runner-m-m-a',
    },
  ])('is refused $what', async ({ verb, resource, name }) => {
    expect(await allowed(account(a), verb, resource, name)).toBe(false);
  });

  it("may create and delete Secrets by RBAC (its run log), and admission refuses any but its own pod's run log", async () => {
    expect(await allowed(account(a), 'create', 'secrets')).toBe(true);
    expect(await allowed(account(a), 'delete', 'secrets', 'tfstate-default-m-m-a')).toBe(true);
    // Impersonated, the account has no pod in its token: it has no run log to write.
    expect(
      await errorAs(account(a), ['create', 'secret', 'generic', 'anything', '--from-literal=a=b']),
    ).toContain('captf-runner-secret-writes');
    expect(
      await errorAs(account(a), ['create', 'secret', 'generic', 'captf-log-captf-m-m-a-apply-a1-abcdef']),
    ).toContain('captf-runner-secret-writes');
    expect(await errorAs(account(a), ['delete', 'secret', 'tfstate-default-m-m-a'])).toContain(
      'captf-runner-secret-writes',
    );
  });

  it('and the API server refuses those reads and writes for real', async () => {
    expect(await errorAs(account(a), ['get', 'secret', 'tfstate-default-m-m-b'])).toContain('Forbidden');
    expect(await errorAs(account(a), ['get', 'secrets'])).toContain('Forbidden');
    expect(
      await errorAs(account(a), ['annotate', 'lease', 'lock-tfstate-default-m-m-b', 'taken=yes']),
    ).toContain('Forbidden');
  });
});

describe('the admission policy holds the controller to runner identities', () => {
  const role = (name: string, rules: unknown[]) =>
    JSON.stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules,
    });

  it.each([
    {
      what: 'a Role under another name',
      body: role('wide', [
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['tfstate-default-m-m-a'], verbs: ['get'] },
      ]),
      message: 'the controller may only write runner identities named captf-runner-',
    },
    {
      what: 'a runner Role without resourceNames',
      body: role('captf-runner-wide', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]),
      message: "a runner identity's Role may only get and update named state Secrets",
    },
    {
      what: 'a runner Role that may read Secrets by no name besides creating its run log',
      body: role('captf-runner-wide', [
        { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'delete', 'get'] },
      ]),
      message: "a runner identity's Role may only get and update named state Secrets",
    },
    {
      what: 'a runner Role naming another Secret',
      body: role('captf-runner-other', [
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['captf-plan-key-m-m-b'], verbs: ['get'] },
      ]),
      message: "a runner identity's Role may only get and update named state Secrets",
    },
    {
      // One name with `update` is the outputs Secret's rule, which the Role cannot tell from a key's: what a
      // runner may write there is held by runner-secret-writes-policy.yaml (the outputs Secret's marks).
      what: 'a runner Role granting update of key Secrets (get only; update names at most the one outputs Secret)',
      body: role('captf-runner-key-update', [
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['state-key', 'old-state-key'],
          verbs: ['get', 'update'],
        },
      ]),
      message: "a runner identity's Role may only get and update named state Secrets",
    },
    {
      what: "a runner Role granting get of one of the controller's own Secrets as a key",
      body: role('captf-runner-key-run', [
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['captf-run-some-job'], verbs: ['get'] },
      ]),
      message: "a runner identity's Role may only get and update named state Secrets",
    },
    {
      what: 'a RoleBinding to another Role',
      body: JSON.stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'captf-runner-m-m-a2', namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'captf-runner-m-m-b' },
        subjects: [{ kind: 'ServiceAccount', name: 'captf-runner-m-m-a2', namespace }],
      }),
      message: "a runner identity's RoleBinding may only bind its own Role to its own ServiceAccount",
    },
    {
      what: 'a Lease that is not a state lock',
      body: JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'kube-scheduler', namespace },
        spec: {},
      }),
      message: 'the controller may only create a free state lock Lease',
    },
  ])('refuses $what', async ({ body, message }) => {
    expect(await errorAs(CONTROLLER_USER, ['create', '-f', '-'], body)).toContain(message);
  });

  it('lets the controller delete a state lock Lease (its state is gone, issue 23 item 3) and no other Lease', async () => {
    const lease = (name: string) =>
      JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace } });
    await kubectl(['-n', namespace, 'create', '-f', '-'], lease('lock-tfstate-default-m-m-gone'));
    await kubectl(['-n', namespace, 'create', '-f', '-'], lease('someone-elses'));
    expect(await errorAs(CONTROLLER_USER, ['delete', 'lease', 'someone-elses'])).toContain(
      'the controller may only create a free state lock Lease named lock-tfstate-…, and delete one',
    );
    expect(await errorAs(CONTROLLER_USER, ['delete', 'lease', 'lock-tfstate-default-m-m-gone'])).toBe('');
  });

  it("admits a runner Role that also grants get of the object's state encryption key Secret (issue 25 item 3)", async () => {
    const body = role('captf-runner-m-m-key', [
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['tfstate-default-m-m-key'],
        verbs: ['get', 'update'],
      },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['state-key'], verbs: ['get'] },
    ]);
    expect(await errorAs(CONTROLLER_USER, ['create', '-f', '-'], body)).toBe('');
  });

  it('refuses the controller any Secret update, which it holds only to grant', async () => {
    const secret = JSON.parse(
      await kubectl(['-n', namespace, 'get', 'secret', 'tfstate-default-m-m-a', '-o', 'json']),
    ) as { metadata: { labels: Record<string, string> } };
    secret.metadata.labels.taken = 'yes';
    expect(await errorAs(CONTROLLER_USER, ['replace', '-f', '-'], JSON.stringify(secret))).toContain(
      'the controller updates no Secret',
    );
  });

  it('lets the controller add the clusterctl move label to a state Secret, and nothing more (issue 23 item 6)', async () => {
    const label = (name: string, labels: Record<string, string>) =>
      errorAs(CONTROLLER_USER, [
        'label',
        'secret',
        name,
        ...Object.entries(labels).map(([k, v]) => `${k}=${v}`),
      ]);
    const move = 'clusterctl.cluster.x-k8s.io/move';
    // Another label, the move label with a value, or the move label on a Secret that is not a state: refused.
    expect(await label('tfstate-default-m-m-a', { taken: 'yes' })).toContain(
      'the controller updates no Secret',
    );
    expect(await label('tfstate-default-m-m-a', { [move]: 'x' })).toContain(
      'the controller updates no Secret',
    );
    await kubectl(['-n', namespace, 'create', 'secret', 'generic', 'not-a-state', '--from-literal=k=v']);
    expect(await label('not-a-state', { [move]: '' })).toContain('the controller updates no Secret');
    // The move label alone, through the controller's own writer: admitted.
    const written = await controller.writer.patchSecretLabels(
      { namespace, name: 'tfstate-default-m-m-a' },
      { [move]: '' },
    );
    expect(written.metadata?.labels).toMatchObject({ [move]: '', tfstate: 'true' });
    // Taking it away again is a change of labels too: refused.
    expect(
      await errorAs(CONTROLLER_USER, ['label', 'secret', 'tfstate-default-m-m-a', `${move}-`]),
    ).toContain('the controller updates no Secret');
  });
});

describe('the outputs Secret (issue 24 item 3)', () => {
  /** The owner of an identity, as the outputs Secret's manifest takes it. */
  const ownerOf = (identity: RunnerIdentity) => {
    const ref = identity.serviceAccount.metadata.ownerReferences?.[0];
    return {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'TerraformMachine' as const,
      name: ref?.name ?? '',
      namespace,
      uid: ref?.uid ?? '',
    };
  };
  /** A Secret as the admin reads it, for a replace as someone else. */
  const secretJson = async (name: string) =>
    JSON.parse(await kubectl(['-n', namespace, 'get', 'secret', name, '-o', 'json'])) as {
      data?: Record<string, string>;
      metadata: { labels?: Record<string, string>; ownerReferences?: unknown[] };
    };

  let o: RunnerIdentity;
  let x: RunnerIdentity;
  beforeAll(async () => {
    o = await machine('m-o', 'm-o-outputs');
    // m-x names a Secret that is not its own: what a compromised controller could still grant, since the
    // identity policy cannot see whose a named Secret is.
    x = await machine('m-x', 'app-credentials');
    await kubectl(['-n', namespace, 'create', 'secret', 'generic', 'app-credentials', '--from-literal=k=v']);
    expect(await ensureRunnerIdentity(controller, x)).toBe('written');
    // The writes policy is installed with the others; wait until the API server enforces it (a dry run).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const probe = JSON.stringify({
        ...(await secretJson('app-credentials')),
        data: { k: Buffer.from('w').toString('base64') },
      });
      const error = await errorAs(account(x), ['replace', '--dry-run=server', '-f', '-'], probe);
      if (error.includes('captf-runner-secret-writes')) break;
      if (Date.now() > deadline) throw new Error(`the runner writes policy is not enforced: ${error}`);
      await sleep(500);
    }
  }, 90_000);

  it('the controller creates it owned by the object and names it in the Role, with its own rights', async () => {
    const manifest = buildOutputsSecret({
      owner: ownerOf(o),
      secretName: 'm-o-outputs',
      writer: o.serviceAccount.metadata.name,
    });
    expect(await ensureOutputsSecret(controller, manifest, ownerOf(o).uid)).toEqual({ kind: 'ours' });
    expect(await ensureRunnerIdentity(controller, o)).toBe('written');
    // One read when it is there.
    controller.takeRequestCounts();
    expect(await ensureOutputsSecret(controller, manifest, ownerOf(o).uid)).toEqual({ kind: 'ours' });
    expect(controller.takeRequestCounts()).toMatchObject({ total: 1, byRequest: { 'get secrets': 1 } });
    expect(await allowed(account(o), 'get', 'secrets', 'm-o-outputs')).toBe(true);
    expect(await allowed(account(o), 'update', 'secrets', 'm-o-outputs')).toBe(true);
    // RBAC lets it delete Secrets (its run log's leftover); admission holds that to its own run log.
    expect(await errorAs(account(o), ['delete', 'secret', 'm-o-outputs'])).toContain(
      'captf-runner-secret-writes',
    );
    // Another object's runner identity may not read it, nor write it.
    expect(await allowed(account(a), 'get', 'secrets', 'm-o-outputs')).toBe(false);
    expect(await allowed(account(a), 'update', 'secrets', 'm-o-outputs')).toBe(false);
    expect(await errorAs(account(a), ['get', 'secret', 'm-o-outputs'])).toContain('Forbidden');
  });

  it('its runner may replace its data, but not detach it from its object', async () => {
    const secret = await secretJson('m-o-outputs');
    const written = { ...secret, data: { out: Buffer.from('value').toString('base64') } };
    expect(await errorAs(account(o), ['replace', '-f', '-'], JSON.stringify(written))).toBe('');
    const detached = { ...(await secretJson('m-o-outputs')) };
    detached.metadata = { ...detached.metadata, ownerReferences: [] };
    expect(await errorAs(account(o), ['replace', '-f', '-'], JSON.stringify(detached))).toContain(
      'captf-runner-secret-writes',
    );
  });

  it("a Secret that is not the object's is never granted; a Role naming it anyway gives its runner no write", async () => {
    const manifest = buildOutputsSecret({
      owner: ownerOf(x),
      secretName: 'app-credentials',
      writer: x.serviceAccount.metadata.name,
    });
    expect(await ensureOutputsSecret(controller, manifest, ownerOf(x).uid)).toMatchObject({
      kind: 'foreign',
    });
    // The Role m-x got in beforeAll names the Secret anyway; the writes policy refuses its runner all the same.
    expect(await allowed(account(x), 'update', 'secrets', 'app-credentials')).toBe(true);
    const taken = {
      ...(await secretJson('app-credentials')),
      data: { k: Buffer.from('w').toString('base64') },
    };
    expect(await errorAs(account(x), ['replace', '-f', '-'], JSON.stringify(taken))).toContain(
      'a runner identity may only update its state Secret',
    );
    expect((await secretJson('app-credentials')).data?.k).toBe(Buffer.from('v').toString('base64'));
  });

  it("another object's runner, even with a Role naming the outputs Secret, may not write it", async () => {
    // m-y's spec names m-o's outputs Secret: its starts are refused, but a compromised controller could
    // still grant the Role; the Secret names its one writer, and the policy holds every other to that.
    const y = await machine('m-y', 'm-o-outputs');
    expect(await ensureRunnerIdentity(controller, y)).toBe('written');
    expect(await allowed(account(y), 'update', 'secrets', 'm-o-outputs')).toBe(true);
    const taken = {
      ...(await secretJson('m-o-outputs')),
      data: { out: Buffer.from('y').toString('base64') },
    };
    expect(await errorAs(account(y), ['replace', '-f', '-'], JSON.stringify(taken))).toContain(
      'captf-runner-secret-writes',
    );
    expect((await secretJson('m-o-outputs')).data?.out).toBe(Buffer.from('value').toString('base64'));
  });

  it('the controller may not name a captf- Secret as an outputs Secret', async () => {
    const body = JSON.stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'captf-runner-m-m-o', namespace },
      rules: [
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['captf-plan-key-m-m-o'], verbs: ['get'] },
      ],
    });
    expect(await errorAs(CONTROLLER_USER, ['replace', '-f', '-'], body)).toContain(
      "a runner identity's Role may only get and update named state Secrets",
    );
  });
});

describe('a re-created object', () => {
  it('gets its identity re-owned, so the garbage collector does not take it from under the new object', async () => {
    await kubectl(['-n', namespace, 'delete', 'terraformmachine', 'm-b', '--wait=true']);
    const again = await machine('m-b');
    expect(again.serviceAccount.metadata.ownerReferences?.[0]?.uid).not.toBe(
      b.serviceAccount.metadata.ownerReferences?.[0]?.uid,
    );
    expect(await ensureRunnerIdentity(controller, again)).toBe('written');
    const uid = again.serviceAccount.metadata.ownerReferences?.[0]?.uid;
    for (const kind of ['serviceaccount', 'role', 'rolebinding']) {
      expect(
        await kubectl([
          '-n',
          namespace,
          'get',
          kind,
          'captf-runner-m-m-b',
          '-o',
          'jsonpath={.metadata.ownerReferences[0].uid}',
        ]),
      ).toBe(uid);
    }
  });
});
