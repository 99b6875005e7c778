import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FINALIZER } from '../../../src/core/preamble.ts';
import { API_VERSION } from '../../../src/schemas/kinds/api-group.ts';
import type { TerraformRunPolicySpec } from '../../../src/schemas/kinds/terraform-run-policy.ts';
import { CONTROLLER_USER, controllerAdapter } from '../../env/impersonation.ts';
import { testStack } from '../../env/index.ts';

// Issue 16 item 2 on the real API server: infra/admission/run-policy.yaml bounds, per namespace, the module
// images and service accounts of our kinds by the TerraformRunPolicy objects there. A refused create
// stores nothing, so no step can start a Job for it; a refused update leaves the stored object (its
// resourceVersion, spec and status) exactly as it was. Users are impersonated with the admin credentials.
// The CRDs, TerraformRunPolicy's among them, are the test env's (test/env/global-setup.ts).

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const POLICY_FILE = join(root, 'infra/admission/run-policy.yaml');
const suffix = randomBytes(3).toString('hex');
/** Namespaces with different bounds, one without any, one whose objects were admitted before its bound. */
const NS = {
  a: `runpol-a-${suffix}`,
  b: `runpol-b-${suffix}`,
  two: `runpol-two-${suffix}`,
  open: `runpol-open-${suffix}`,
  tightened: `runpol-tight-${suffix}`,
  deny: `runpol-deny-${suffix}`,
};
const DENY_BINDING = `captf-run-policy-deny-${suffix}`;
/** May write our kinds and every ConfigMap in NS.a, as a team's own role would let it. */
const TENANT = 'tenant';

async function kubectl(args: string[], input?: string): Promise<string> {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/** Runs kubectl and returns its error text, or '' when it succeeded. */
async function kubectlError(args: string[], input?: string): Promise<string> {
  try {
    await kubectl(args, input);
    return '';
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
}

const exists = (args: string[]) =>
  kubectl(['get', ...args, '-o', 'name'])
    .then(() => true)
    .catch(() => false);

type Kind =
  | 'TerraformCluster'
  | 'TerraformMachine'
  | 'TerraformMachinePool'
  | 'TerraformClusterTemplate'
  | 'TerraformMachineTemplate'
  | 'TerraformMachinePoolTemplate';

/** An object of `kind`; templates carry `spec` under spec.template.spec, as Cluster API clones it. */
function manifest(kind: Kind, namespace: string, name: string, spec: Record<string, unknown>): string {
  const body = kind.endsWith('Template') ? { template: { spec } } : spec;
  return JSON.stringify({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec: body });
}

const create = (kind: Kind, namespace: string, name: string, spec: Record<string, unknown>) =>
  kubectlError(['create', '-f', '-'], manifest(kind, namespace, name, spec));

const runPolicy = (namespace: string, name: string, spec: TerraformRunPolicySpec) =>
  JSON.stringify({
    apiVersion: API_VERSION,
    kind: 'TerraformRunPolicy',
    metadata: { name, namespace },
    spec,
  });

async function stored(resource: string, namespace: string, name: string) {
  return JSON.parse(await kubectl(['-n', namespace, 'get', resource, name, '-o', 'json'])) as {
    metadata: { resourceVersion: string; finalizers?: string[] };
    spec: Record<string, unknown> & { source: { image: string } };
    status?: Record<string, unknown>;
  };
}

/**
 * Retries a write the policy must refuse until its error names `refusedBy`: a policy or binding takes effect
 * once the API server compiled it. Throws with the last answer.
 */
async function until(refusedBy: string, write: (attempt: number) => Promise<string>): Promise<void> {
  const deadline = Date.now() + 60_000;
  let answer = '';
  for (let attempt = 0; Date.now() < deadline; attempt += 1) {
    answer = await write(attempt);
    if (answer.includes(refusedBy)) return;
    await sleep(500);
  }
  throw new Error(`${refusedBy}: not enforced within 60 s; last answer: ${answer || 'accepted'}`);
}

let before: { policy: boolean };

beforeAll(async () => {
  before = { policy: await exists(['-f', POLICY_FILE]) };
  for (const file of ['namespace.yaml', 'rbac/controller.yaml']) {
    await kubectl(['apply', '-f', join(root, 'infra', file)]);
  }
  for (const namespace of Object.values(NS)) await kubectl(['create', 'namespace', namespace]);
  // Admitted while its namespace had no TerraformRunPolicy; the one below then refuses its image.
  expect(
    await create('TerraformCluster', NS.tightened, 'old', {
      source: { image: 'docker.io/someone/anything:1' },
      jobs: { serviceAccountName: 'builder' },
    }),
  ).toBe('');
  expect(
    await create('TerraformCluster', NS.deny, 'before-deny', { source: { image: 'example.invalid/x:1' } }),
  ).toBe('');
  await kubectl(['apply', '-f', POLICY_FILE]);
  const policies: [string, string, TerraformRunPolicySpec][] = [
    [
      NS.a,
      'team-a',
      {
        allowedImages: ['registry.example.com/team-a/', 'ghcr.io/acme/network'],
        allowedServiceAccounts: ['captf-runner'],
      },
    ],
    [
      NS.b,
      'team-b',
      { allowedImages: ['ghcr.io/team-b/'], allowedServiceAccounts: ['runner-b', 'captf-runner'] },
    ],
    [NS.two, 'platform', { allowedImages: ['ghcr.io/acme/'] }],
    [NS.two, 'security', { allowedImages: ['ghcr.io/acme/approved/'] }],
    [
      NS.tightened,
      'bound',
      { allowedImages: ['registry.example.com/'], allowedServiceAccounts: ['captf-runner'] },
    ],
  ];
  for (const [namespace, name, spec] of policies) {
    await kubectl(['apply', '-f', '-'], runPolicy(namespace, name, spec));
  }
  // The documented Deny option (docs/install.md): the shipped binding with parameterNotFoundAction Deny,
  // held to one namespace so it leaves the rest of the shared stack alone.
  const binding = parseAllDocuments(readFileSync(POLICY_FILE, 'utf8'))
    .map((doc) => doc.toJSON())
    .find(
      (doc) => doc.kind === 'ValidatingAdmissionPolicyBinding' && doc.metadata.name === 'captf-run-policy',
    );
  binding.metadata.name = DENY_BINDING;
  binding.spec.paramRef.parameterNotFoundAction = 'Deny';
  binding.spec.matchResources = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS.deny } },
  };
  await kubectl(['apply', '-f', '-'], JSON.stringify(binding));
  // A team's own role: everything on our kinds, ConfigMaps and Secrets in its namespace (not `*` on the
  // group), and reading its bound.
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'team', namespace: NS.a },
      rules: [
        {
          apiGroups: ['infrastructure.cluster.x-k8s.io'],
          resources: [
            'terraformclusters',
            'terraformmachines',
            'terraformmachinepools',
            'terraformclustertemplates',
            'terraformmachinetemplates',
            'terraformmachinepooltemplates',
            'terraformplans',
          ],
          verbs: ['*'],
        },
        {
          apiGroups: ['infrastructure.cluster.x-k8s.io'],
          resources: ['terraformrunpolicies'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: [''], resources: ['configmaps', 'secrets', 'serviceaccounts'], verbs: ['*'] },
      ],
    }),
  );
  await kubectl(['-n', NS.a, 'create', 'rolebinding', 'team', '--role=team', `--user=${TENANT}`]);

  await until("ValidatingAdmissionPolicy 'captf-run-policy'", (attempt) =>
    create('TerraformMachine', NS.a, `probe-${attempt}`, { source: { image: 'evil.example/x:1' } }),
  );
  await until(DENY_BINDING, (attempt) =>
    create('TerraformMachine', NS.deny, `probe-${attempt}`, { source: { image: 'x.io/y:1' } }),
  );
}, 180_000);

afterAll(async () => {
  const gone = ['--ignore-not-found', '--wait=false'];
  await kubectl(['delete', 'validatingadmissionpolicybinding', DENY_BINDING, ...gone]);
  for (const namespace of Object.values(NS)) await kubectl(['delete', 'namespace', namespace, ...gone]);
  if (!before.policy) await kubectl(['delete', '-f', POLICY_FILE, ...gone]);
}, 120_000);

const ALLOWED_IN_A = 'registry.example.com/team-a/vpc:1.4.0';

describe('run policy (ValidatingAdmissionPolicy captf-run-policy)', () => {
  it.each([
    {
      id: 'RP01',
      name: 'a TerraformCluster with an allowed image and service accounts is accepted',
      kind: 'TerraformCluster' as const,
      namespace: NS.a,
      spec: {
        source: { image: ALLOWED_IN_A },
        jobs: { serviceAccountName: 'captf-runner' },
        defaults: { jobs: { serviceAccountName: 'captf-runner' } },
      },
    },
    {
      id: 'RP02',
      name: 'a repository entry allows that repository at any tag or digest',
      kind: 'TerraformMachine' as const,
      namespace: NS.a,
      spec: { source: { image: `ghcr.io/acme/network@sha256:${'a'.repeat(64)}` } },
    },
    {
      id: 'RP03',
      name: 'each namespace has its own bound: B allows its registry and its own account',
      kind: 'TerraformMachinePool' as const,
      namespace: NS.b,
      spec: { source: { image: 'ghcr.io/team-b/pool:2' }, jobs: { serviceAccountName: 'runner-b' } },
    },
    {
      id: 'RP04',
      name: 'templates with allowed values are accepted',
      kind: 'TerraformMachinePoolTemplate' as const,
      namespace: NS.a,
      spec: { source: { image: ALLOWED_IN_A }, jobs: { serviceAccountName: 'captf-runner' } },
    },
    {
      id: 'RP05',
      name: 'a namespace without a TerraformRunPolicy is not bounded (parameterNotFoundAction: Allow)',
      kind: 'TerraformCluster' as const,
      namespace: NS.open,
      spec: { source: { image: 'evil.example/miner:latest' }, jobs: { serviceAccountName: 'admin' } },
    },
    {
      id: 'RP06',
      name: 'with two policies, an image both allow is accepted',
      kind: 'TerraformMachine' as const,
      namespace: NS.two,
      spec: { source: { image: 'ghcr.io/acme/approved/vm:3' } },
    },
  ])('$id: $name', async ({ kind, namespace, spec }) => {
    const name = `ok-${randomBytes(3).toString('hex')}`;
    expect(await create(kind, namespace, name, spec)).toBe('');
  });

  it.each([
    {
      id: 'RP11',
      name: 'an image outside the allowed registries',
      kind: 'TerraformCluster' as const,
      namespace: NS.a,
      spec: { source: { image: 'evil.example/miner:latest' } },
      message: `spec.source.image evil.example/miner:latest is not allowed in namespace ${NS.a}: its TerraformRunPolicy team-a allows registry.example.com/team-a/, ghcr.io/acme/network`,
    },
    {
      id: 'RP12',
      name: 'an image whose path only starts like an allowed one',
      kind: 'TerraformMachine' as const,
      namespace: NS.a,
      spec: { source: { image: 'registry.example.com/team-a-evil/x:1' } },
      message: 'spec.source.image registry.example.com/team-a-evil/x:1 is not allowed',
    },
    {
      id: 'RP13',
      name: 'a longer repository name than a repository entry',
      kind: 'TerraformMachine' as const,
      namespace: NS.a,
      spec: { source: { image: 'ghcr.io/acme/network-evil:1' } },
      message: 'spec.source.image ghcr.io/acme/network-evil:1 is not allowed',
    },
    {
      id: 'RP14',
      name: "another namespace's registry",
      kind: 'TerraformMachine' as const,
      namespace: NS.b,
      spec: { source: { image: ALLOWED_IN_A } },
      message: `spec.source.image ${ALLOWED_IN_A} is not allowed in namespace ${NS.b}: its TerraformRunPolicy team-b allows ghcr.io/team-b/`,
    },
    {
      id: 'RP15',
      name: 'a service account not allowed (spec.jobs.serviceAccountName)',
      kind: 'TerraformMachine' as const,
      namespace: NS.a,
      spec: { source: { image: ALLOWED_IN_A }, jobs: { serviceAccountName: 'namespace-admin' } },
      message: `spec.jobs.serviceAccountName namespace-admin is not allowed in namespace ${NS.a}: its TerraformRunPolicy team-a allows captf-runner`,
    },
    {
      id: 'RP16',
      name: "a service account not allowed in the cluster's defaults",
      kind: 'TerraformCluster' as const,
      namespace: NS.a,
      spec: { source: { image: ALLOWED_IN_A }, defaults: { jobs: { serviceAccountName: 'runner-b' } } },
      message: `spec.defaults.jobs.serviceAccountName runner-b is not allowed in namespace ${NS.a}: its TerraformRunPolicy team-a allows captf-runner`,
    },
    {
      id: 'RP17',
      name: 'a template with a bad image',
      kind: 'TerraformMachineTemplate' as const,
      namespace: NS.a,
      spec: { source: { image: 'evil.example/miner:latest' } },
      message: `spec.template.spec.source.image evil.example/miner:latest is not allowed in namespace ${NS.a}`,
    },
    {
      id: 'RP18',
      name: 'a cluster template with a bad default service account',
      kind: 'TerraformClusterTemplate' as const,
      namespace: NS.a,
      spec: { source: { image: ALLOWED_IN_A }, defaults: { jobs: { serviceAccountName: 'default' } } },
      message: `spec.template.spec.defaults.jobs.serviceAccountName default is not allowed in namespace ${NS.a}`,
    },
    {
      id: 'RP19',
      name: 'an image one of two policies allows: a second policy only narrows',
      kind: 'TerraformMachine' as const,
      namespace: NS.two,
      spec: { source: { image: 'ghcr.io/acme/vm:3' } },
      message: `spec.source.image ghcr.io/acme/vm:3 is not allowed in namespace ${NS.two}: its TerraformRunPolicy security allows ghcr.io/acme/approved/`,
    },
  ])(
    '$id: refuses $name, naming field, value and what is allowed; nothing is stored',
    async ({ kind, namespace, spec, message }) => {
      const name = `bad-${randomBytes(3).toString('hex')}`;
      const error = await create(kind, namespace, name, spec);
      expect(error).toContain("ValidatingAdmissionPolicy 'captf-run-policy'");
      expect(error).toContain(message);
      expect(await exists([kind.toLowerCase(), name, '-n', namespace])).toBe(false);
    },
  );

  it('RP21: an update to a bad image or account is refused; the stored object keeps its resourceVersion, spec and status', async () => {
    expect(
      await create('TerraformMachine', NS.a, 'running', {
        source: { image: ALLOWED_IN_A },
        jobs: { serviceAccountName: 'captf-runner' },
      }),
    ).toBe('');
    // What the controller records of a run (DESIGN.md section 2), through the status subresource.
    await kubectl([
      '-n',
      NS.a,
      'patch',
      'terraformmachine',
      'running',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          observedGeneration: 1,
          source: { pinnedImage: `registry.example.com/team-a/vpc@sha256:${'b'.repeat(64)}` },
        },
      }),
    ]);
    const kept = await stored('terraformmachine', NS.a, 'running');
    for (const [patch, refusal] of [
      [
        { spec: { source: { image: 'evil.example/miner:latest' } } },
        'spec.source.image evil.example/miner:latest',
      ],
      [
        { spec: { jobs: { serviceAccountName: 'namespace-admin' } } },
        'spec.jobs.serviceAccountName namespace-admin',
      ],
    ] as const) {
      const error = await kubectlError([
        '-n',
        NS.a,
        'patch',
        'terraformmachine',
        'running',
        '--type=merge',
        '-p',
        JSON.stringify(patch),
      ]);
      expect(error).toContain("ValidatingAdmissionPolicy 'captf-run-policy'");
      expect(error).toContain(refusal);
    }
    expect(await stored('terraformmachine', NS.a, 'running')).toEqual(kept);
  });

  it('RP22: bounding does not freeze objects admitted before: metadata, unchanged values and the controller pass; a new bad value does not', async () => {
    const kube = controllerAdapter('run-policy');
    const ref = async () => ({
      namespace: NS.tightened,
      name: 'old',
      resourceVersion: (await stored('terraformcluster', NS.tightened, 'old')).metadata.resourceVersion,
    });
    // The controller's own writes: its finalizer, status, and the Cluster API contract field in spec.
    await kube.writer.patchCustomMetadata('TerraformCluster', await ref(), { finalizers: [FINALIZER] });
    await kube.writer.patchStatus('TerraformCluster', await ref(), { observedGeneration: 1 });
    await kube.writer.patchSpec('TerraformCluster', await ref(), {
      controlPlaneEndpoint: { host: '10.0.0.1', port: 6443 },
    });
    const edit = (spec: unknown) =>
      kubectlError([
        '-n',
        NS.tightened,
        'patch',
        'terraformcluster',
        'old',
        '--type=merge',
        '-p',
        JSON.stringify({ spec }),
      ]);
    // A person's edit that keeps the admitted image and account but changes a variable.
    expect(await edit({ variables: { size: 'large' } })).toBe('');
    expect(await edit({ source: { image: 'docker.io/someone/other:2' } })).toContain(
      `spec.source.image docker.io/someone/other:2 is not allowed in namespace ${NS.tightened}: its TerraformRunPolicy bound allows registry.example.com/`,
    );
    const object = await stored('terraformcluster', NS.tightened, 'old');
    expect(object.spec.source.image).toBe('docker.io/someone/anything:1');
    expect(object.spec.variables).toEqual({ size: 'large' });
    expect(object.status).toMatchObject({ observedGeneration: 1 });
    await kube.writer.patchCustomMetadata('TerraformCluster', await ref(), { finalizers: [] });
  });

  it('RP23: Deny refuses every write of our kinds in a namespace without a TerraformRunPolicy, but never a status write', async () => {
    const kube = controllerAdapter('run-policy');
    const object = await stored('terraformcluster', NS.deny, 'before-deny');
    const ref = { namespace: NS.deny, name: 'before-deny', resourceVersion: object.metadata.resourceVersion };
    // Status is the status subresource, which the policy does not match.
    const written = await kube.writer.patchStatus('TerraformCluster', ref, { observedGeneration: 1 });
    expect(written.status).toMatchObject({ observedGeneration: 1 });
    // The binding's params are resolved before any match condition: even a label write is refused, so
    // the documented switch to Deny comes after every namespace with objects has a TerraformRunPolicy.
    const error = await kubectlError([
      '-n',
      NS.deny,
      'patch',
      'terraformcluster',
      'before-deny',
      '--type=merge',
      '-p',
      '{"metadata":{"labels":{"a":"b"}}}',
    ]);
    expect(error).toContain(DENY_BINDING);
    expect(error).toContain('no params found');
    expect(await create('TerraformMachine', NS.deny, 'new', { source: { image: 'x.io/y:1' } })).toContain(
      'no params found',
    );
  });
});

describe('TerraformRunPolicy: who may write it, and what it holds', () => {
  it.each([
    { id: 'RG01', verb: 'create', args: ['create', '-f', '-'] },
    {
      id: 'RG02',
      verb: 'patch',
      args: [
        'patch',
        'terraformrunpolicy',
        'team-a',
        '--type=merge',
        '-p',
        '{"spec":{"allowedImages":["evil.example/"]}}',
      ],
    },
    { id: 'RG03', verb: 'delete', args: ['delete', 'terraformrunpolicy', 'team-a'] },
  ])(
    '$id: a team that may write our kinds, ConfigMaps and Secrets may not $verb its bound (it may read it)',
    async ({ verb, args }) => {
      const input = runPolicy(NS.a, 'mine', { allowedImages: ['evil.example/'] });
      const error = await kubectlError(['--as', TENANT, '-n', NS.a, ...args], input);
      expect(error).toContain(`User "${TENANT}" cannot ${verb} resource "terraformrunpolicies"`);
      const policy = JSON.parse(
        await kubectl(['-n', NS.a, 'get', 'terraformrunpolicy', 'team-a', '-o', 'json']),
      );
      expect(policy.spec.allowedImages).toEqual(['registry.example.com/team-a/', 'ghcr.io/acme/network']);
    },
  );

  it('RG04: neither may the controller', async () => {
    for (const verb of ['create', 'patch', 'delete']) {
      const answer = await kubectl([
        'auth',
        'can-i',
        verb,
        'terraformrunpolicies',
        '-n',
        NS.a,
        '--as',
        CONTROLLER_USER,
      ]).catch((error: { stdout?: string }) => String(error.stdout));
      expect(answer.trim(), verb).toBe('no');
    }
  });

  it.each<{ id: string; name: string; spec: Record<string, unknown>; message: string }>([
    {
      id: 'RG11',
      name: 'a registry without a /',
      spec: { allowedImages: ['registry.example.com'] },
      message: 'spec.allowedImages[0]: Invalid value: "registry.example.com"',
    },
    {
      id: 'RG12',
      name: 'an entry with whitespace',
      spec: { allowedImages: ['registry.example.com/a b'] },
      message: 'spec.allowedImages[0]: Invalid value',
    },
    { id: 'RG13', name: 'an empty list', spec: { allowedImages: [] }, message: 'spec.allowedImages' },
    {
      id: 'RG14',
      name: 'a service account that is no name',
      spec: { allowedServiceAccounts: ['Bad_Name'] },
      message: 'spec.allowedServiceAccounts[0]: Invalid value: "Bad_Name"',
    },
    {
      id: 'RG15',
      name: 'more entries than a refusal message can list',
      spec: { allowedImages: Array.from({ length: 17 }, (_, index) => `r${index}.example.com/`) },
      message: 'must have at most 16 items',
    },
    {
      id: 'RG16',
      name: 'a misspelt field, which would bound nothing',
      spec: { allowedImage: ['registry.example.com/'] },
      message: 'unknown field "spec.allowedImage"',
    },
  ])('$id: the schema refuses $name', async ({ spec, message }) => {
    const body = JSON.stringify({
      apiVersion: API_VERSION,
      kind: 'TerraformRunPolicy',
      metadata: { name: `bad-${randomBytes(3).toString('hex')}`, namespace: NS.b },
      spec,
    });
    expect(await kubectlError(['create', '-f', '-'], body)).toContain(message);
  });
});

describe('reinstalling the policy', () => {
  it('RP31: after the policy is deleted and applied again, a namespace bounded since is enforced (kubernetes/kubernetes#130887 froze a ConfigMap param here)', async () => {
    await kubectl(['delete', '-f', POLICY_FILE, '--wait=true']);
    // The informer of a core param kind is torn down once no binding names it for one refresh (1 s).
    await sleep(3000);
    await kubectl(['apply', '-f', POLICY_FILE]);
    const namespace = `runpol-again-${suffix}`;
    await kubectl(['create', 'namespace', namespace]);
    try {
      await kubectl(
        ['apply', '-f', '-'],
        runPolicy(namespace, 'later', { allowedImages: ['registry.example.com/'] }),
      );
      await until(`its TerraformRunPolicy later allows registry.example.com/`, (attempt) =>
        create('TerraformMachine', namespace, `probe-${attempt}`, { source: { image: 'evil.example/x:1' } }),
      );
    } finally {
      await kubectl(['delete', 'namespace', namespace, '--wait=false']);
    }
  });
});
