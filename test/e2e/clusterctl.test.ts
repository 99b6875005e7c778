import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { CLUSTERCTL_FILES, DEFAULT_NAMESPACE, RELEASE_SERIES } from '../../scripts/clusterctl.ts';
import { locateBinaries, readVersions } from '../../src/local/binaries.ts';
import { type ControlPlane, startControlPlane } from '../../src/local/control-plane.ts';
import { type Kubectl, kubectlFor } from '../../src/local/kubectl.ts';
import { applyKnativeCrds } from '../env/knative-crds.ts';

// `clusterctl init`, `upgrade plan`, `upgrade apply` and `delete` of our provider with the real clusterctl
// (v1.14.2, scripts/build-binaries.sh clusterctl) against a local control plane of its own (clusterctl
// delete removes cluster-wide objects the shared stack's tests rely on). The provider repository is a local
// one in clusterctl's layout (`<provider label>/<version>/`, named by `providers:` in clusterctl's config):
// Cluster API's core components rendered from its module (`kubectl kustomize core/config/default`, as its
// release does) and ours from infra/clusterctl/ (npm run gen:components). No older release of ours exists,
// so the "previous" version v0.0.9 is the current components under an older version label, with their
// image defaults tagged 0.0.9. cert-manager is there as clusterctl's own check of it needs: its CRDs from
// its module at clusterctl's default version (nothing reconciles them, as nothing runs Knative's CRDs).
// Nothing runs the installed Deployments: the test is about what clusterctl installs, where, and with what.
// The default components (the always-on Deployment) go through init, upgrade and delete; the Knative ones
// are then installed into a second namespace from the same release by their own file name.

const MINUTE = 60_000;
const run = promisify(execFile);
const INFRA = 'infrastructure-terraform';
const PREVIOUS = 'v0.0.9';
const CURRENT = `v${(JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version}`;
/** clusterctl's default cert-manager (cmd/clusterctl/client/config/cert_manager_client.go of v1.14.2). */
const CERT_MANAGER_VERSION = 'v1.21.1';
/** clusterctl's `images:` override of our provider's Deployment images (repository only). */
const MIRROR = 'registry.test/mirror';
const IMAGES = {
  controller: 'registry.test/captf/controller:e2e',
  runner: 'registry.test/captf/runner:e2e',
};

let dir: string;
let plane: ControlPlane | undefined;
let kubectl: Kubectl;
let configPath: string;
let knativeConfigPath: string;
const namespace = `captf-cc-${randomBytes(3).toString('hex')}`;
const knativeNamespace = `${namespace}-kn`;

interface PodSpec {
  containers: { name: string; image: string; env?: { name: string; value?: string }[] }[];
  initContainers?: { name: string; image: string }[];
}

interface Installed {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid: string; labels?: Record<string, string> };
  subjects?: { namespace?: string }[];
  spec?: Record<string, unknown>;
}

/** The Go module cache's copy of a module (scripts/build-binaries.sh downloaded Cluster API's already). */
async function moduleDir(module: string): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', module], {
    env: { ...process.env, GOFLAGS: '-mod=mod' },
    maxBuffer: 4 * 1024 * 1024,
  });
  return (JSON.parse(stdout) as { Dir: string }).Dir;
}

/** Runs clusterctl with our config against the local control plane; throws with its output on failure. */
async function clusterctl(args: string[], config = configPath): Promise<string> {
  try {
    const { stdout, stderr } = await run(
      locateBinaries().capi.clusterctl,
      [...args, '--config', config, '--kubeconfig', plane?.kubeconfigPath ?? '', '-v', '1'],
      {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: join(dir, 'home'),
          CLUSTERCTL_DISABLE_VERSIONCHECK: 'true',
        },
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    return `${stdout}${stderr}`;
  } catch (cause) {
    const { stdout = '', stderr = '' } = cause as { stdout?: string; stderr?: string };
    throw new Error(`clusterctl ${args.join(' ')}: ${stdout}${stderr}`, { cause });
  }
}

/** One version of a provider in the local repository: its components and metadata. */
function publish(label: string, version: string, file: string, components: string, metadata: string): string {
  const versionDir = join(dir, 'repository', label, version);
  mkdirSync(versionDir, { recursive: true });
  writeFileSync(join(versionDir, file), components);
  writeFileSync(join(versionDir, 'metadata.yaml'), metadata);
  return `file://${join(versionDir, file)}`;
}

/** Our components' objects (identity only), as a components file lists them. */
function componentObjects(
  file: string = CLUSTERCTL_FILES.components,
): { apiVersion: string; kind: string; name: string; namespaced: boolean }[] {
  return parseAllDocuments(readFileSync(join(import.meta.dirname, '..', '..', file), 'utf8'))
    .map((doc) => doc.toJS() as Installed | null)
    .filter((doc): doc is Installed => doc !== null && doc.kind !== 'Namespace')
    .map((doc) => ({
      apiVersion: doc.apiVersion,
      kind: doc.kind,
      name: doc.metadata.name,
      namespaced: doc.metadata.namespace !== undefined,
    }));
}

/** Each object of our components as installed (undefined where it is missing), read by kind and name. */
async function installedObjects(
  file: string = CLUSTERCTL_FILES.components,
  ns = namespace,
): Promise<Map<string, Installed | undefined>> {
  const found = new Map<string, Installed | undefined>();
  for (const object of componentObjects(file)) {
    const resource = `${object.kind.toLowerCase()}${object.apiVersion.includes('/') ? `.${object.apiVersion.split('/')[0]}` : ''}`;
    const out = await kubectl.run([
      'get',
      resource,
      object.name,
      ...(object.namespaced ? ['-n', ns] : []),
      '--ignore-not-found',
      '-o',
      'json',
    ]);
    found.set(
      `${object.kind}/${object.name}`,
      out.trim() === '' ? undefined : (JSON.parse(out) as Installed),
    );
  }
  return found;
}

async function inventory(): Promise<{ metadata: { name: string; namespace: string }; version: string }[]> {
  const out = await kubectl.run(['get', 'providers.clusterctl.cluster.x-k8s.io', '-A', '-o', 'json']);
  return (JSON.parse(out) as { items: { metadata: { name: string; namespace: string }; version: string }[] })
    .items;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'captf-e2e-clusterctl-'));
  const binaries = locateBinaries();
  plane = await startControlPlane({ binaries, workDir: join(dir, 'plane') });
  kubectl = kubectlFor(binaries.kubectl, plane.kubeconfigPath);
  mkdirSync(join(dir, 'home'), { recursive: true });

  const capiVersion = `v${readVersions().CAPI_VERSION}`;
  const [capiDir, certManagerDir] = await Promise.all([
    moduleDir(`sigs.k8s.io/cluster-api@${capiVersion}`),
    moduleDir(`github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}`),
  ]);
  // cert-manager's Issuer and Certificate CRDs: clusterctl init checks cert-manager by creating one of each.
  const certManagerCrds = ['issuers', 'certificates'].map((plural) =>
    join(certManagerDir, 'deploy', 'crds', `cert-manager.io_${plural}.yaml`),
  );
  await kubectl.run(['apply', '--server-side', ...certManagerCrds.flatMap((file) => ['-f', file])]);
  await kubectl.run([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...certManagerCrds.flatMap((file) => ['-f', file]),
  ]);
  // The Knative flavour's Service and sources need Knative's CRDs.
  await applyKnativeCrds({ kubectlPath: binaries.kubectl, kubeconfigPath: plane.kubeconfigPath });

  const { stdout: core } = await run(
    binaries.kubectl,
    ['kustomize', join(capiDir, 'core', 'config', 'default')],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const coreUrl = publish(
    'cluster-api',
    capiVersion,
    'core-components.yaml',
    core,
    readFileSync(join(capiDir, 'metadata.yaml'), 'utf8'),
  );
  // The stand-in older release needs a release series in the newest metadata (clusterctl upgrade reads the
  // series of every version from it).
  const metadata = stringify({
    apiVersion: 'clusterctl.cluster.x-k8s.io/v1alpha3',
    kind: 'Metadata',
    releaseSeries: [...RELEASE_SERIES, { major: 0, minor: 0, contract: RELEASE_SERIES[0]?.contract }],
  });
  const urls = (['components', 'componentsKnative'] as const).map((flavour) => {
    const file = CLUSTERCTL_FILES[flavour];
    const name = basename(file);
    const components = readFileSync(join(import.meta.dirname, '..', '..', file), 'utf8');
    publish(
      INFRA,
      PREVIOUS,
      name,
      components.replaceAll(`:${CURRENT.slice(1)}}`, `:${PREVIOUS.slice(1)}}`),
      metadata,
    );
    return publish(INFRA, CURRENT, name, components, metadata);
  });
  const config = (infraUrl: string | undefined, variables: Record<string, string>) =>
    stringify({
      providers: [
        { name: 'cluster-api', type: 'CoreProvider', url: coreUrl },
        { name: 'terraform', type: 'InfrastructureProvider', url: infraUrl },
      ],
      images: { [INFRA]: { repository: MIRROR } },
      // Our variables (scripts/clusterctl.ts CLUSTERCTL_VARIABLES).
      ...variables,
    });
  configPath = join(dir, 'clusterctl.yaml');
  writeFileSync(configPath, config(urls[0], {}));
  // The Knative Service is no Deployment, which clusterctl's `images:` rewrite: its images are variables,
  // and so is the namespace of the sources' OIDC ServiceAccounts, which clusterctl does not pass on.
  knativeConfigPath = join(dir, 'clusterctl-knative.yaml');
  writeFileSync(
    knativeConfigPath,
    config(urls[1], {
      CAPTF_CONTROLLER_IMAGE: IMAGES.controller,
      CAPTF_RUNNER_IMAGE: IMAGES.runner,
      CAPTF_NAMESPACE: knativeNamespace,
    }),
  );
}, 5 * MINUTE);

afterAll(async () => {
  await plane?.stop();
  if (dir && !process.env.CAPTF_KEEP_STACK) rmSync(dir, { recursive: true, force: true });
}, 2 * MINUTE);

/** clusterctl's inventory names our provider in the target namespace at `version`. */
async function expectInventoried(version: string): Promise<void> {
  expect(await inventory()).toContainEqual(
    expect.objectContaining({
      metadata: expect.objectContaining({ name: INFRA, namespace }),
      version,
    }),
  );
}

describe('clusterctl init, upgrade and delete of the terraform infrastructure provider', () => {
  it(
    'init: Cluster API core, then ours at the previous version into a namespace of our choosing, with the variables applied and no captf-system left',
    async () => {
      const core = await clusterctl([
        'init',
        '--core',
        `cluster-api`,
        '--bootstrap',
        '-',
        '--control-plane',
        '-',
      ]);
      expect(core).toContain('Installing provider="cluster-api"');
      // clusterctl checks cert-manager by creating and deleting a namespace of test objects; a second init
      // while that namespace terminates would find no cert-manager and try to install one from GitHub.
      await kubectl.run(['wait', '--for=delete', 'namespace/cert-manager-test', '--timeout=60s']);
      const ours = await clusterctl([
        'init',
        '--infrastructure',
        `terraform:${PREVIOUS}`,
        '--target-namespace',
        namespace,
      ]);
      expect(ours).toContain(
        `Installing provider="${INFRA}" version="${PREVIOUS}" targetNamespace="${namespace}"`,
      );
      await expectInventoried(PREVIOUS);

      const installed = await installedObjects();
      const missing = [...installed].filter(([, object]) => object === undefined).map(([key]) => key);
      expect(missing).toEqual([]);
      // Every namespaced object in the target namespace, every binding's subject there too, and no string
      // anywhere that still names captf-system (the namespace does not exist).
      for (const [key, object] of installed) {
        if (object?.metadata.namespace !== undefined) expect(object.metadata.namespace, key).toBe(namespace);
        for (const subject of object?.subjects ?? []) expect(subject.namespace, key).toBe(namespace);
        expect(JSON.stringify(object), key).not.toContain(DEFAULT_NAMESPACE);
      }
      expect(
        await kubectl.run(['get', 'namespace', DEFAULT_NAMESPACE, '--ignore-not-found', '-o', 'name']),
      ).toBe('');

      // clusterctl's `images:` override reaches every container of ours, the runner's among them (the
      // handlers read it from their pod, CAPTF_RUNNER_IMAGE_CONTAINER), and the Redis URL is the
      // namespace-free default.
      const deployment = installed.get('Deployment/captf-controller') as Installed & {
        spec: { template: { spec: PodSpec } };
      };
      const containers = deployment.spec.template.spec.containers;
      expect(containers.map((c) => [c.name, c.image])).toEqual([
        ['manager', `${MIRROR}/captf-controller:${PREVIOUS.slice(1)}`],
        ['relay', `${MIRROR}/captf-controller:${PREVIOUS.slice(1)}`],
      ]);
      const env = (container: string) =>
        Object.fromEntries(
          (containers.find((c) => c.name === container)?.env ?? []).map((e) => [e.name, e.value]),
        );
      expect(deployment.spec.template.spec.initContainers?.map((c) => [c.name, c.image])).toEqual([
        ['runner', `${MIRROR}/captf-runner:${PREVIOUS.slice(1)}`],
      ]);
      expect(env('manager').CAPTF_RUNNER_IMAGE_CONTAINER).toBe('runner');
      expect(env('manager').REDIS_URL).toBe('redis://captf-redis:6379');
      expect(env('relay').REDIS_URL).toBe('redis://captf-redis:6379');
      expect(env('relay').CAPTF_HANDLER_URL).toBe('http://127.0.0.1:8080');
      const redis = installed.get('Deployment/captf-redis') as Installed & {
        spec: { template: { spec: PodSpec } };
      };
      // The bundled Valkey keeps its tag and digest; only the repository moves to the mirror.
      expect(redis.spec.template.spec.containers[0]?.image).toMatch(
        new RegExp(`^${MIRROR}/valkey:8\\.\\d+\\.\\d+@sha256:[0-9a-f]{64}$`),
      );
    },
    5 * MINUTE,
  );

  it(
    'upgrade plan shows the current version next, and upgrade apply moves to it in the same namespace',
    async () => {
      const plan = await clusterctl(['upgrade', 'plan']);
      expect(plan).toMatch(
        new RegExp(`${INFRA}\\s+${namespace}\\s+InfrastructureProvider\\s+${PREVIOUS}\\s+${CURRENT}`),
      );
      const applied = await clusterctl(['upgrade', 'apply', '--infrastructure', `terraform:${CURRENT}`]);
      expect(applied).toContain(
        `Installing provider="${INFRA}" version="${CURRENT}" targetNamespace="${namespace}"`,
      );
      await expectInventoried(CURRENT);
      const installed = await installedObjects();
      expect([...installed].filter(([, object]) => object === undefined).map(([key]) => key)).toEqual([]);
      for (const [key, object] of installed)
        expect(JSON.stringify(object), key).not.toContain(DEFAULT_NAMESPACE);
      // The new release's image defaults, through the same override.
      const deployment = installed.get('Deployment/captf-controller') as Installed & {
        spec: { template: { spec: PodSpec } };
      };
      expect(deployment.spec.template.spec.containers.map((c) => c.image)).toEqual([
        `${MIRROR}/captf-controller:${CURRENT.slice(1)}`,
        `${MIRROR}/captf-controller:${CURRENT.slice(1)}`,
      ]);
      // Nothing newer: the plan has no next version for us any more.
      expect(await clusterctl(['upgrade', 'plan'])).toMatch(
        new RegExp(`${INFRA}\\s+${namespace}\\s+InfrastructureProvider\\s+${CURRENT}\\s+Already up to date`),
      );
    },
    5 * MINUTE,
  );

  it(
    'delete removes the provider and its namespaced objects and admission policies, keeping the CRDs, the namespace and the cluster-wide RBAC (clusterctl’s own rules)',
    async () => {
      await clusterctl(['delete', '--infrastructure', 'terraform']);
      expect((await inventory()).map((p) => p.metadata.name)).not.toContain(INFRA);
      const left = [...(await installedObjects())]
        .filter(([, object]) => object !== undefined)
        .map(([key]) => key.split('/')[0] ?? key);
      // clusterctl v1.14.2 deletes a cluster-wide object other than a CRD, Namespace or webhook configuration
      // only when its name starts with `<namespace>-` (cmd/clusterctl/client/cluster/components.go), which
      // ours do not: the ClusterRoles and ClusterRoleBindings stay (docs/install.md says how to remove them).
      // It takes a ValidatingAdmissionPolicy for a namespaced kind, so those go.
      const kinds = (list: string[]) =>
        Object.fromEntries([...new Set(list)].map((k) => [k, list.filter((l) => l === k).length]));
      const expected = componentObjects()
        .map((o) => o.kind)
        .filter((kind) => ['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(kind));
      expect(kinds(left)).toEqual(kinds(expected));
      expect(await kubectl.run(['get', 'namespace', namespace, '-o', 'name'])).toContain(namespace);
    },
    5 * MINUTE,
  );

  it(
    'the Knative flavour, by its file name: init into another namespace with its variables, no captf-system left',
    async () => {
      const file = CLUSTERCTL_FILES.componentsKnative;
      const out = await clusterctl(
        ['init', '--infrastructure', 'terraform', '--target-namespace', knativeNamespace],
        knativeConfigPath,
      );
      expect(out).toContain(
        `Installing provider="${INFRA}" version="${CURRENT}" targetNamespace="${knativeNamespace}"`,
      );
      const installed = await installedObjects(file, knativeNamespace);
      expect([...installed].filter(([, object]) => object === undefined).map(([key]) => key)).toEqual([]);
      for (const [key, object] of installed) {
        if (object?.metadata.namespace !== undefined)
          expect(object.metadata.namespace, key).toBe(knativeNamespace);
        expect(JSON.stringify(object), key).not.toContain(DEFAULT_NAMESPACE);
      }
      const service = installed.get('Service/captf') as Installed & { spec: { template: { spec: PodSpec } } };
      const container = service.spec.template.spec.containers.find((c) => c.name === 'captf');
      const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]));
      expect(container?.image).toBe(IMAGES.controller);
      expect(env.CAPTF_RUNNER_IMAGE).toBe(IMAGES.runner);
      expect(env.REDIS_URL).toBe('redis://captf-redis:6379');
      expect(env.CAPTF_AUTH_AUDIENCE).toBe('captf');
      expect(env.CAPTF_AUTH_ALLOWED_USERS?.split(',')).toEqual([
        `system:serviceaccount:${knativeNamespace}:captf-objects-oidc-sources.knative.dev-apiserversource`,
        `system:serviceaccount:${knativeNamespace}:captf-tick-oidc-sources.knative.dev-pingsource`,
      ]);
      for (const source of ['ApiServerSource/captf-objects', 'PingSource/captf-tick'])
        expect(
          (installed.get(source)?.spec?.sink as { audience?: string } | undefined)?.audience,
          source,
        ).toBe('captf');
    },
    5 * MINUTE,
  );
});
