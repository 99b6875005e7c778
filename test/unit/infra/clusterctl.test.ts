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
import { SECRET_RESOURCES, watchedResources } from '../../../src/relay/resources.ts';
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

/** A Deployment of the components, as the tests below read it. */
interface DeploymentDoc {
  spec: {
    replicas?: number;
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        serviceAccountName?: string;
        securityContext?: unknown;
        volumes?: { name: string }[];
        containers: {
          name: string;
          image: string;
          args?: string[];
          ports?: { name: string; containerPort: number }[];
          env: { name: string; value?: string; valueFrom?: unknown }[];
          securityContext?: unknown;
          volumeMounts?: unknown[];
        }[];
        initContainers?: { name: string; image: string }[];
      };
    };
  };
}
interface ServiceDoc {
  spec: {
    type?: string;
    selector: Record<string, string>;
    ports: { name?: string; port: number; targetPort?: string | number }[];
  };
}
interface Peer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: unknown;
}
interface PolicyDoc {
  metadata: { name: string };
  spec: {
    podSelector: { matchLabels?: Record<string, string> };
    ingress: { from?: Peer[]; ports?: { port: number | string }[] }[];
  };
}
interface RoleDoc {
  kind: string;
  metadata: { name: string };
  rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[] }[];
}
interface BindingDoc {
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string }[];
}

/** The default components' objects. */
const componentDocs = documents(committed(CLUSTERCTL_FILES.components));

/** A Deployment of the default components by name; throws when it is missing. */
const deploymentOf = (name: string): DeploymentDoc => {
  const found = componentDocs.find((d) => d.kind === 'Deployment' && d.metadata.name === name);
  if (found === undefined)
    throw new Error(`no Deployment ${name} in ${CLUSTERCTL_FILES.components}: ${REGENERATE}`);
  return found as unknown as DeploymentDoc;
};

/**
 * A container's environment as the kubelet and clusterctl would give it: a variable's default, a Secret's
 * value or the pod's name a 40-character stand-in.
 */
const envOf = (deployment: DeploymentDoc, container: string): Record<string, string> =>
  Object.fromEntries(
    (deployment.spec.template.spec.containers.find((c) => c.name === container)?.env ?? []).map((e) => [
      e.name,
      e.value === undefined ? 'x'.repeat(40) : defaultOf(e.value),
    ]),
  );

/** Whether a label selector's matchLabels select these labels. */
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

/**
 * Whether an ingress NetworkPolicy lets a pod of the same namespace with these labels in on a port, given
 * by its number and name: a rule without `from` admits every peer, one without `ports` every port.
 */
const admits = (policy: PolicyDoc, labels: Record<string, string>, ...port: (number | string)[]) =>
  policy.spec.ingress.some(
    (rule) =>
      (rule.from === undefined ||
        rule.from.some(
          (peer) =>
            peer.namespaceSelector === undefined &&
            peer.podSelector !== undefined &&
            matches(peer.podSelector.matchLabels ?? {}, labels),
        )) &&
      (rule.ports === undefined || rule.ports.some((p) => port.includes(p.port))),
  );

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
      'Deployment/captf-secret-relay',
      'Service/captf-controller',
    ]);
  });

  it('the always-on Deployment’s containers start with their environment: the handlers’ and the relay’s configuration read', async () => {
    const deployment = deploymentOf('captf-controller');
    // The runner image is the init container's, read from the pod as clusterctl installed it.
    const initContainers = deployment.spec.template.spec.initContainers ?? [];
    const pod = {
      spec: { initContainers: initContainers.map((c) => ({ ...c, image: defaultOf(c.image) })) },
    };
    const managerEnv = await withRunnerImageFromPod(
      { ...envOf(deployment, 'manager'), POD_NAMESPACE: 'ns', HOSTNAME: 'captf-controller-1' },
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
      expect(handlers.config.kube).toEqual({ kind: 'in-cluster' });
    }
    const relay = readRelayConfig(envOf(deployment, 'relay'));
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

  it('the Secrets’ relay is a Deployment of its own under captf-secret-events: it watches the Secrets only, does not tick and posts to the handlers’ Service', () => {
    const relay = deploymentOf('captf-secret-relay');
    const controller = deploymentOf('captf-controller');
    const pod = relay.spec.template.spec;
    // Its own identity, never the controller's (DESIGN.md section 15: the controller lists no Secret).
    expect(pod.serviceAccountName).toBe('captf-secret-events');
    expect(controller.spec.template.spec.serviceAccountName).toBe('captf-controller');
    expect(relay.spec.replicas).toBe(1);
    expect(pod.containers.map((c) => [c.name, c.args])).toEqual([['relay', ['/app/relay/relay.mjs']]]);
    const read = readRelayConfig(envOf(relay, 'relay'));
    expect(read.ok, read.ok ? '' : read.message).toBe(true);
    const objects = readRelayConfig(envOf(controller, 'relay'));
    expect(objects.ok, objects.ok ? '' : objects.message).toBe(true);
    if (!read.ok || !objects.ok) return;
    expect(read.config.watch).toBe('secrets');
    expect(watchedResources(read.config.watchNamespaces, read.config.watch)).toEqual(SECRET_RESOURCES);
    // The objects' relay of the controller's pod watches no Secret and is the one that ticks.
    expect(objects.config.watch).toBe('objects');
    expect(read.config.tickIntervalMs).toBe(0);
    expect(objects.config.tickIntervalMs).toBeGreaterThan(0);
    // The same token, Redis and namespaces as the objects' relay.
    expect(read.config.token).toBe('x'.repeat(40));
    expect(read.config.redis).toEqual(objects.config.redis);
    expect(read.config.keyPrefix).toBe(objects.config.keyPrefix);
    expect(read.config.watchNamespaces).toEqual(objects.config.watchNamespaces);
    // The handlers through the Service in front of the controller's pods, on the manager's port `http`.
    const url = new URL(read.config.eventsUrl);
    expect(url.pathname).toBe('/events');
    const service = componentDocs.find(
      (d) => d.apiVersion === 'v1' && d.kind === 'Service' && d.metadata.name === url.hostname,
    ) as unknown as ServiceDoc | undefined;
    expect(service, `no Service ${url.hostname}`).toBeDefined();
    expect(service?.spec.type).toBe('ClusterIP');
    const port = service?.spec.ports.find((p) => p.port === Number(url.port));
    const manager = controller.spec.template.spec.containers.find((c) => c.name === 'manager');
    expect(manager?.ports?.find((p) => p.name === port?.targetPort)?.containerPort).toBe(8080);
    // The Service selects the controller's pods and no other Deployment's.
    const selected = componentDocs
      .filter((d) => d.kind === 'Deployment')
      .filter((d) =>
        matches(service?.spec.selector ?? {}, deploymentOf(d.metadata.name).spec.template.metadata.labels),
      )
      .map((d) => d.metadata.name);
    expect(selected).toEqual(['captf-controller']);
    // The restricted pod and container settings of the objects' relay, and its Redis CA volume.
    const objectsRelay = controller.spec.template.spec.containers.find((c) => c.name === 'relay');
    expect(pod.securityContext).toEqual(controller.spec.template.spec.securityContext);
    expect(pod.containers[0]?.securityContext).toEqual(objectsRelay?.securityContext);
    expect(pod.containers[0]?.volumeMounts).toEqual(objectsRelay?.volumeMounts);
    expect(pod.volumes).toEqual(controller.spec.template.spec.volumes?.filter((v) => v.name === 'redis-tls'));
  });

  it('the Secrets’ relay runs the controller image: replaced from captf-images, a clusterctl variable in the components', () => {
    const deployment = parse(committed('infra/deployment/kustomization.yaml')) as {
      replacements: {
        source: { name: string; fieldPath: string };
        targets: { select: { kind: string; name: string }; fieldPaths: string[] }[];
      }[];
    };
    const targets = deployment.replacements
      .filter((r) => r.source.name === 'captf-images')
      .flatMap((r) =>
        r.targets
          .filter((t) => t.select.kind === 'Deployment' && t.select.name === 'captf-secret-relay')
          .flatMap((t) => t.fieldPaths.map((path) => `${r.source.fieldPath} -> ${path}`)),
      );
    expect(targets).toEqual(['data.controller -> spec.template.spec.containers.[name=relay].image']);
    const image = (name: string, container: string) =>
      deploymentOf(name).spec.template.spec.containers.find((c) => c.name === container)?.image;
    const { configMapGenerator } = parse(committed('infra/deployment/kustomization.yaml')) as {
      configMapGenerator: { literals: string[] }[];
    };
    const controllerImage = configMapGenerator[0]?.literals
      .find((l) => l.startsWith('controller='))
      ?.slice('controller='.length);
    expect(image('captf-secret-relay', 'relay')).toBe(
      `\${CAPTF_CONTROLLER_IMAGE:=${canonicalImage(controllerImage ?? '')}}`,
    );
    expect(image('captf-secret-relay', 'relay')).toBe(image('captf-controller', 'manager'));
  });

  it('the network: Redis admits the Secrets’ relay besides the Knative flavour’s pods and the controller’s, and no policy keeps it from the handlers', () => {
    const relayLabels = deploymentOf('captf-secret-relay').spec.template.metadata.labels;
    const controllerLabels = deploymentOf('captf-controller').spec.template.metadata.labels;
    const policies = componentDocs.filter((d) => d.kind === 'NetworkPolicy') as unknown as PolicyDoc[];
    const redis = policies.find((p) => p.metadata.name === 'captf-redis');
    const knativeRedis = (
      documents(committed(CLUSTERCTL_FILES.componentsKnative)).filter(
        (d) => d.kind === 'NetworkPolicy' && d.metadata.name === 'captf-redis',
      ) as unknown as PolicyDoc[]
    )[0];
    expect(redis?.spec.ingress).toHaveLength(1);
    expect(redis?.spec.ingress[0]?.from).toEqual([
      ...(knativeRedis?.spec.ingress[0]?.from ?? []),
      { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'captf-controller' } } },
      { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'captf-secret-relay' } } },
    ]);
    expect(redis?.spec.ingress[0]?.ports).toEqual(knativeRedis?.spec.ingress[0]?.ports);
    expect(redis && admits(redis, relayLabels, 6379, 'redis')).toBe(true);
    // Every policy that selects the handlers' pods (none in this flavour) must let the relay in.
    for (const policy of policies.filter((p) =>
      matches(p.spec.podSelector.matchLabels ?? {}, controllerLabels),
    ))
      expect(admits(policy, relayLabels, 8080, 'http'), policy.metadata.name).toBe(true);
  });

  it('only captf-secret-events may list or watch Secrets in the default components', () => {
    const roles = new Map(
      (
        componentDocs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role') as unknown as RoleDoc[]
      ).map((r) => [`${r.kind}/${r.metadata.name}`, r]),
    );
    const listers = (
      componentDocs.filter(
        (d) => d.kind === 'ClusterRoleBinding' || d.kind === 'RoleBinding',
      ) as unknown as BindingDoc[]
    )
      .filter((b) =>
        (roles.get(`${b.roleRef.kind}/${b.roleRef.name}`)?.rules ?? []).some(
          (rule) =>
            rule.apiGroups?.includes('') &&
            (rule.resources?.includes('secrets') || rule.resources?.includes('*')) &&
            rule.verbs.some((verb) => verb === 'list' || verb === 'watch' || verb === '*'),
        ),
      )
      .flatMap((b) => b.subjects.map((s) => `${s.kind}/${s.name}`));
    expect(listers).toEqual(['ServiceAccount/captf-secret-events']);
  });
});
