import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { withRunnerImageFromPod } from '../../../functions/runner-image.ts';
import {
  CLUSTERCTL_FILES,
  canonicalImage,
  componentsProblems,
  DEFAULT_AUDIENCE,
  metadataYaml,
  namespaceReferences,
  RELEASE_SERIES,
  withClusterctlVariables,
} from '../../../scripts/clusterctl.ts';
import { readConfig } from '../../../src/config.ts';
import { readRelayConfig } from '../../../src/relay/config.ts';
import { CRD_LABELS } from '../../../src/schemas/kinds/crd.ts';

// clusterctl's provider files (issue 11 item 5). infra/clusterctl/infrastructure-components.yaml is
// `kubectl kustomize infra/`: test/integration/infra/kustomize.test.ts renders it with the real kubectl;
// here, without kubectl, every object of infra/kustomization.yaml's files must be in it as written.

const root = join(import.meta.dirname, '..', '..', '..');
const committed = (path: string): string => readFileSync(join(root, path), 'utf8');
const REGENERATE = 'run `npm run gen:components` and commit the result';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: {
    sink?: { audience?: string };
    template?: { spec?: { containers?: { image: string }[]; initContainers?: { image: string }[] } };
  };
}

/** The images of a Deployment's pod template, or none. */
const imagesOf = (doc: Manifest | undefined): { image: string }[] =>
  doc?.kind === 'Deployment'
    ? [...(doc.spec?.template?.spec?.containers ?? []), ...(doc.spec?.template?.spec?.initContainers ?? [])]
    : [];

/** A clusterctl variable's default, or the value itself. */
const defaultOf = (value: string) => /^\$\{[A-Z_]+:=(.*)\}$/.exec(value)?.[1] ?? value;

const documents = (text: string): Manifest[] => parseAllDocuments(text).map((doc) => doc.toJS() as Manifest);
const identity = (doc: Manifest) =>
  `${doc.apiVersion} ${doc.kind} ${doc.metadata.namespace ?? ''}/${doc.metadata.name}`;

const kustomization = parse(committed('infra/kustomization.yaml')) as {
  resources: string[];
  labels: { pairs: Record<string, string> }[];
  replacements: { targets: { select: { kind: string; name: string } }[] }[];
};

describe('clusterctl provider files (infra/clusterctl)', () => {
  it('metadata.yaml is exactly what scripts/gen-components.ts generates', () => {
    expect(committed(CLUSTERCTL_FILES.metadata), `${CLUSTERCTL_FILES.metadata} is stale: ${REGENERATE}`).toBe(
      metadataYaml(),
    );
  });

  it('the package version is in a release series, whose contract is the one the CRDs are labelled with', () => {
    const version = (JSON.parse(committed('package.json')) as { version: string }).version;
    const [major, minor] = version.split('.').map(Number);
    const series = RELEASE_SERIES.find((row) => row.major === major && row.minor === minor);
    expect(series, `no release series for ${version}`).toBeDefined();
    expect(CRD_LABELS[`cluster.x-k8s.io/${series?.contract}`]).toBe('v1alpha1');
  });

  it('the components are what clusterctl init takes: one Namespace, only our variables with defaults, every object labelled', () => {
    expect(componentsProblems(committed(CLUSTERCTL_FILES.components))).toEqual([]);
    expect(componentsProblems(committed(CLUSTERCTL_FILES.componentsKnative))).toEqual([]);
    // A variable without a default: clusterctl init would refuse to run without it.
    const required = `\${CAPTF_NAMESPACE}`;
    expect(
      componentsProblems(
        `kind: Namespace\nmetadata: {labels: {cluster.x-k8s.io/provider: infrastructure-terraform}}\nx: ${required}\n`,
      ),
    ).toEqual([`${required}: not a clusterctl variable of ours with a default`]);
  });

  it('nothing names captf-system but the fields clusterctl init rewrites to --target-namespace and the defaults of variables', () => {
    const components = committed(CLUSTERCTL_FILES.components) + committed(CLUSTERCTL_FILES.componentsKnative);
    expect(namespaceReferences(committed(CLUSTERCTL_FILES.components))).toEqual([]);
    expect(namespaceReferences(committed(CLUSTERCTL_FILES.componentsKnative))).toEqual([]);
    // The check sees a namespace in a string clusterctl leaves alone, and only there.
    const object = (extra: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: captf-system}\ndata: {${extra}}\n`;
    expect(namespaceReferences(object('url: "redis://r.captf-system.svc"'))).toEqual(['ConfigMap/x']);
    expect(namespaceReferences(object(`url: "\${CAPTF_REDIS_URL:=redis://r.captf-system.svc}"`))).toEqual([]);
    expect(namespaceReferences(object(''))).toEqual([]);
    // Every variable of ours is in the components, with a default.
    for (const name of [
      'CAPTF_CONTROLLER_IMAGE',
      'CAPTF_RUNNER_IMAGE',
      'CAPTF_REDIS_URL',
      'CAPTF_AUTH_AUDIENCE',
      'CAPTF_NAMESPACE',
    ])
      expect(components, name).toContain(`\${${name}:=`);
  });

  it('every Deployment image is canonical, as clusterctl parses it (it refuses `redis:7`)', () => {
    expect(canonicalImage('redis:7.4-alpine')).toBe('docker.io/library/redis:7.4-alpine');
    expect(canonicalImage('valkey/valkey@sha256:ab')).toBe('docker.io/valkey/valkey@sha256:ab');
    expect(canonicalImage('ghcr.io/captf/captf-runner:0.1.0')).toBe('ghcr.io/captf/captf-runner:0.1.0');
    expect(canonicalImage('localhost/x:1')).toBe('localhost/x:1');
    expect(canonicalImage('127.0.0.1:5000/x:1')).toBe('127.0.0.1:5000/x:1');
    const images = [CLUSTERCTL_FILES.components, CLUSTERCTL_FILES.componentsKnative].flatMap((file) =>
      documents(committed(file)).flatMap(imagesOf),
    );
    expect(images.length).toBeGreaterThan(0);
    for (const { image } of images) expect(defaultOf(image)).toBe(canonicalImage(defaultOf(image)));
  });

  it('the variables go in document by document, leaving the other objects as kustomize wrote them', () => {
    const other = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  list:\n    - a\n';
    const source =
      'apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata:\n  name: captf-tick\nspec:\n  sink:\n    audience: captf.captf-system\n';
    expect(withClusterctlVariables(`${other}---\n${source}`)).toBe(
      `${other}---\n${source.replace('captf.captf-system', `\${CAPTF_AUTH_AUDIENCE:=${DEFAULT_AUDIENCE}}`)}`,
    );
  });

  it('the Knative components hold every object of infra/kustomization.yaml’s files, as written there', () => {
    const components = new Map(
      documents(committed(CLUSTERCTL_FILES.componentsKnative)).map((d) => [identity(d), d]),
    );
    // kustomize rewrites the targets of its replacements (the image references): only their presence counts.
    const replaced = new Set(
      kustomization.replacements.flatMap((r) => r.targets.map((t) => `${t.select.kind}/${t.select.name}`)),
    );
    const labels = Object.assign({}, ...kustomization.labels.map((l) => l.pairs)) as Record<string, string>;
    const expected = kustomization.resources.flatMap((file) => documents(committed(join('infra', file))));
    for (const doc of expected) {
      const rendered = components.get(identity(doc));
      expect(rendered, `${identity(doc)} is missing: ${REGENERATE}`).toBeDefined();
      if (replaced.has(`${doc.kind}/${doc.metadata.name}`)) continue;
      // Images are canonical and the bundled Redis's a variable: compared by their defaults' canonical form.
      for (const [index, container] of imagesOf(rendered).entries()) {
        const written = imagesOf(doc)[index]?.image ?? '';
        expect(defaultOf(container.image)).toBe(canonicalImage(written));
        container.image = written;
      }
      // The sources' audience is a clusterctl variable (scripts/clusterctl.ts CLUSTERCTL_VARIABLES).
      if (rendered?.spec?.sink?.audience !== undefined) {
        expect(rendered.spec.sink.audience).toBe(`\${CAPTF_AUTH_AUDIENCE:=${DEFAULT_AUDIENCE}}`);
        rendered.spec.sink.audience = doc.spec?.sink?.audience;
      }
      const labelled = {
        ...doc,
        metadata: { ...doc.metadata, labels: { ...doc.metadata.labels, ...labels } },
      };
      expect(rendered, `${identity(doc)} is stale: ${REGENERATE}`).toEqual(labelled);
    }
    // The rest is what kustomize generates itself (the captf-images ConfigMap).
    expect(components.size - expected.length).toBe(1);
  });

  it('the default components are the Knative ones with the always-on Deployment for the Knative Service and sources', () => {
    const deployment = parse(committed('infra/deployment/kustomization.yaml')) as typeof kustomization & {
      configMapGenerator: unknown;
    };
    // The same files but knative/, and the same image references.
    expect(deployment.resources).toEqual([
      ...kustomization.resources.filter((file) => !file.startsWith('knative/')).map((file) => `../${file}`),
      'controller.yaml',
    ]);
    expect(deployment.configMapGenerator).toEqual(
      (parse(committed('infra/kustomization.yaml')) as { configMapGenerator: unknown }).configMapGenerator,
    );
    const keys = (file: string) =>
      new Set(documents(committed(file)).map((d) => `${d.kind}/${d.metadata.name}`));
    const knative = keys(CLUSTERCTL_FILES.componentsKnative);
    const always = keys(CLUSTERCTL_FILES.components);
    expect([...knative].filter((key) => !always.has(key)).sort()).toEqual([
      'ApiServerSource/captf-objects',
      'ApiServerSource/captf-secrets',
      'NetworkPolicy/captf-handlers',
      'PingSource/captf-tick',
      'Service/captf',
    ]);
    expect([...always].filter((key) => !knative.has(key)).sort()).toEqual([
      'ClusterRoleBinding/captf-controller-events',
      'Deployment/captf-controller',
    ]);
  });

  it('the always-on Deployment’s containers start with their environment: the handlers’ and the relay’s configuration read', async () => {
    const deployment = documents(committed(CLUSTERCTL_FILES.components)).find(
      (d) => d.kind === 'Deployment' && d.metadata.name === 'captf-controller',
    ) as unknown as {
      spec: {
        template: {
          spec: {
            containers: {
              name: string;
              args?: string[];
              env: { name: string; value?: string; valueFrom?: unknown }[];
            }[];
            initContainers: { name: string; image: string }[];
          };
        };
      };
    };
    // Values as the kubelet and clusterctl would give them: a variable's default, a Secret's or the pod's
    // name a stand-in.
    const envOf = (name: string) =>
      Object.fromEntries(
        (deployment.spec.template.spec.containers.find((c) => c.name === name)?.env ?? []).map((e) => [
          e.name,
          e.value === undefined ? 'x'.repeat(40) : defaultOf(e.value),
        ]),
      );
    // The runner image is the init container's, read from the pod as clusterctl installed it.
    const { initContainers } = deployment.spec.template.spec;
    const pod = {
      spec: { initContainers: initContainers.map((c) => ({ ...c, image: defaultOf(c.image) })) },
    };
    const managerEnv = await withRunnerImageFromPod(
      { ...envOf('manager'), POD_NAMESPACE: 'ns', HOSTNAME: 'captf-controller-1' },
      () => async () => pod,
    );
    const { configMapGenerator } = parse(committed('infra/kustomization.yaml')) as {
      configMapGenerator: { literals: string[] }[];
    };
    const runnerImage = configMapGenerator[0]?.literals
      .find((l) => l.startsWith('runner='))
      ?.slice('runner='.length);
    expect(managerEnv.CAPTF_RUNNER_IMAGE).toBe(runnerImage);
    const handlers = readConfig(managerEnv);
    expect(handlers.ok, handlers.ok ? '' : handlers.message).toBe(true);
    if (handlers.ok) {
      expect(handlers.config.auth).toMatchObject({ mode: 'bearer', token: 'x'.repeat(40) });
      expect(handlers.config.port).toBe(8080);
      expect(handlers.config.kube).toEqual({ mode: 'in-cluster' });
    }
    const relay = readRelayConfig(envOf('relay'));
    expect(relay.ok, relay.ok ? '' : relay.message).toBe(true);
    if (relay.ok) {
      // The relay posts to the handlers of its own pod, with the same token, and runs its timer.
      expect(relay.config.eventsUrl).toBe('http://127.0.0.1:8080/events');
      expect(relay.config.token).toBe('x'.repeat(40));
      expect(relay.config.tickIntervalMs).toBeGreaterThan(0);
    }
    expect(deployment.spec.template.spec.containers.find((c) => c.name === 'relay')?.args).toEqual([
      '/app/relay/relay.mjs',
    ]);
  });
});
