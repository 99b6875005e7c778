import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { CLUSTERCTL_FILES, COMPONENT_SOURCES, componentsYaml } from '../../../scripts/clusterctl.ts';
import { testStack } from '../../env/index.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');

interface Manifest {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
}

async function render(): Promise<{ text: string; docs: Manifest[] }> {
  const { stdout } = await run(testStack().kubectlPath, ['kustomize', join(root, 'infra')]);
  return { text: stdout, docs: parseAllDocuments(stdout).map((doc) => doc.toJSON() as Manifest) };
}

async function kubectl(args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  const { kubeconfigPath } = testStack();
  const child = run(testStack().kubectlPath, ['--kubeconfig', kubeconfigPath, ...args]);
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  return child;
}

describe('infra/ renders', () => {
  it('kubectl kustomize infra/ renders every part of DESIGN.md section 15 (the PrometheusRule is applied on its own)', async () => {
    const { docs } = await render();
    for (const doc of docs) {
      expect(doc.apiVersion, JSON.stringify(doc.metadata)).toBeTruthy();
      expect(doc.kind).toBeTruthy();
      expect(doc.metadata?.name).toBeTruthy();
    }
    const kinds = new Set(docs.map((doc) => doc.kind));
    for (const kind of [
      'CustomResourceDefinition',
      'ClusterRole',
      'Service',
      'ApiServerSource',
      'PingSource',
      'Deployment',
      'ConfigMap',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]) {
      expect(kinds, kind).toContain(kind);
    }
  });

  it.each(['components', 'componentsKnative'] as const)(
    'the clusterctl %s file is exactly its kustomization’s rendering (run `npm run gen:components`)',
    async (flavour) => {
      const { dir, args } = COMPONENT_SOURCES[flavour];
      const { stdout } = await run(testStack().kubectlPath, ['kustomize', ...args, join(root, dir)]);
      expect(readFileSync(join(root, CLUSTERCTL_FILES[flavour]), 'utf8')).toBe(
        componentsYaml(stdout, `${dir}/ (kubectl kustomize ${[...args, dir].join(' ')})`),
      );
    },
  );

  it('the PrometheusRule keeps CAPTFJobFailing (kind, op) and CAPTFNoRecentSuccess (namespace, name, 6 h for 30 m)', async () => {
    const rule = parse(readFileSync(join(root, 'infra/monitoring/prometheusrule.yaml'), 'utf8'));
    const rules = rule.spec.groups.flatMap(
      (g: { rules: Array<{ alert: string; expr: string; for?: string }> }) => g.rules,
    );
    const failing = rules.find((r: { alert: string }) => r.alert === 'CAPTFJobFailing');
    const stale = rules.find((r: { alert: string }) => r.alert === 'CAPTFNoRecentSuccess');
    expect(failing.expr).toContain('by (kind, op)');
    expect(failing.expr).toContain('[30m]');
    expect(failing.expr).toContain('> 2');
    expect(stale.expr).toContain('by (kind, namespace, name, op)');
    expect(stale.expr).toContain('6 * 3600');
    expect(stale.for).toBe('30m');
  });

  it('kubectl kustomize infra/monitoring/ renders the PrometheusRule, the PodMonitor and the dashboard ConfigMap', async () => {
    const { stdout } = await run(testStack().kubectlPath, ['kustomize', join(root, 'infra/monitoring')]);
    const docs = parseAllDocuments(stdout).map(
      (doc) =>
        doc.toJSON() as Manifest & {
          metadata: { labels?: Record<string, string> };
          data?: Record<string, string>;
        },
    );
    expect(docs.map((doc) => doc.kind).sort()).toEqual([
      'ConfigMap',
      'NetworkPolicy',
      'PodMonitor',
      'PrometheusRule',
    ]);
    const dashboard = docs.find((doc) => doc.kind === 'ConfigMap');
    expect(dashboard?.metadata.labels?.grafana_dashboard).toBe('1');
    expect(JSON.parse(dashboard?.data?.['dashboard.json'] ?? '{}').uid).toBe('captf');
    const monitor = docs.find((doc) => doc.kind === 'PodMonitor') as unknown as {
      spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: { path: string }[] };
    };
    // The Knative Service's pods (infra/knative/service.yaml names it captf).
    expect(monitor.spec.selector.matchLabels).toEqual({ 'serving.knative.dev/service': 'captf' });
    expect(monitor.spec.podMetricsEndpoints[0]?.path).toBe('/metrics');
  });

  it("the monitoring scrapes as shipped: the PodMonitor, the plain scrape config and the NetworkPolicy name one port of one set of pods, keeping the objects' own labels", async () => {
    const { stdout } = await run(testStack().kubectlPath, ['kustomize', join(root, 'infra/monitoring')]);
    const docs = parseAllDocuments(stdout).map((doc) => doc.toJSON() as Record<string, never>);
    const monitor = docs.find((doc) => doc.kind === 'PodMonitor') as unknown as {
      spec: {
        namespaceSelector: { matchNames: string[] };
        selector: { matchLabels: Record<string, string> };
        podMetricsEndpoints: { port: string; path: string; interval: string; honorLabels?: boolean }[];
      };
    };
    const endpoint = monitor.spec.podMetricsEndpoints[0];
    // The per-object series' `namespace` must survive the target's own (the rules join on it).
    expect(endpoint?.honorLabels).toBe(true);
    const policy = docs.find((doc) => doc.kind === 'NetworkPolicy') as unknown as {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        ingress: { ports: { port: string }[] }[];
      };
    };
    expect(policy.spec.podSelector.matchLabels).toEqual(monitor.spec.selector.matchLabels);
    expect(policy.spec.ingress.flatMap((rule) => rule.ports.map((port) => port.port))).toEqual([
      endpoint?.port,
    ]);

    const [scrape] = parse(readFileSync(join(root, 'infra/monitoring/scrape-config.yaml'), 'utf8')) as {
      scrape_interval: string;
      metrics_path: string;
      honor_labels: boolean;
      kubernetes_sd_configs: { namespaces: { names: string[] }; selectors: { label: string }[] }[];
      relabel_configs: { source_labels?: string[]; regex?: string; action?: string }[];
    }[];
    if (!scrape) throw new Error('scrape-config.yaml holds no scrape config');
    const [label, value] = Object.entries(monitor.spec.selector.matchLabels)[0] ?? [];
    expect(scrape.kubernetes_sd_configs[0]?.selectors[0]?.label).toBe(`${label}=${value}`);
    expect(scrape.kubernetes_sd_configs[0]?.namespaces.names).toEqual(
      monitor.spec.namespaceSelector.matchNames,
    );
    expect(
      scrape.relabel_configs.find(
        (relabel) => relabel.source_labels?.[0] === '__meta_kubernetes_pod_container_port_name',
      ),
    ).toMatchObject({ regex: endpoint?.port, action: 'keep' });
    expect([scrape.metrics_path, scrape.scrape_interval, scrape.honor_labels]).toEqual([
      endpoint?.path,
      endpoint?.interval,
      true,
    ]);
  });

  it('with the kube-prometheus-stack component, its Prometheus selects the PodMonitor and the PrometheusRule by `release`', async () => {
    const overlay = mkdtempSync(join(root, '.overlay-'));
    try {
      const from = (path: string) => relative(overlay, join(root, path));
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        stringify({
          resources: [from('infra/monitoring')],
          components: [from('infra/monitoring/kube-prometheus-stack')],
        }),
      );
      const { stdout } = await run(testStack().kubectlPath, ['kustomize', overlay]);
      const docs = parseAllDocuments(stdout).map(
        (doc) => doc.toJSON() as { kind: string; metadata: { labels?: Record<string, string> } },
      );
      const released = docs.filter((doc) => doc.metadata.labels?.release === 'kube-prometheus-stack');
      expect(released.map((doc) => doc.kind).sort()).toEqual(['PodMonitor', 'PrometheusRule']);
      // kube-prometheus-stack's Grafana sidecar finds dashboards by this label in every namespace.
      expect(docs.find((doc) => doc.kind === 'ConfigMap')?.metadata.labels?.grafana_dashboard).toBe('1');
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });

  it('Redis runs with maxmemory-policy noeviction', () => {
    const text = readFileSync(join(root, 'infra/redis/redis.yaml'), 'utf8');
    expect(text).toMatch(/--maxmemory-policy\s*\n\s*- noeviction/);
  });

  it('kubectl apply --dry-run=server accepts the rendered RBAC, admission, Redis and CRD objects', async () => {
    const { docs } = await render();
    await kubectl(['create', 'namespace', 'captf-system']).catch((error: { stderr?: string }) => {
      if (!String(error.stderr).includes('AlreadyExists')) throw error;
    });
    // Knative's kinds are applied with Knative's CRDs by install-doc.test.ts.
    const foreign = new Set(['ApiServerSource', 'PingSource']);
    const servable = docs.filter(
      (doc) =>
        !foreign.has(doc.kind ?? '') &&
        !(doc.kind === 'Service' && doc.apiVersion?.startsWith('serving.knative.dev')),
    );
    const namespaced = servable.filter(
      (doc) =>
        doc.metadata?.namespace === undefined &&
        ['Role', 'RoleBinding', 'ServiceAccount'].includes(doc.kind ?? ''),
    );
    const rest = servable.filter((doc) => !namespaced.includes(doc));
    const yaml = (list: Manifest[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items: list });
    const first = await kubectl(['apply', '--dry-run=server', '-f', '-'], yaml(rest));
    expect(first.stdout).toContain('clusterrole.rbac.authorization.k8s.io/captf-controller');
    expect(first.stdout).toContain(
      'validatingadmissionpolicy.admissionregistration.k8s.io/captf-terraformplan-approval',
    );
    expect(first.stdout).toContain(
      'validatingadmissionpolicy.admissionregistration.k8s.io/captf-run-policy ',
    );
    expect(first.stdout).toContain(
      'validatingadmissionpolicybinding.admissionregistration.k8s.io/captf-run-policy ',
    );
    expect(first.stdout).toContain(
      'customresourcedefinition.apiextensions.k8s.io/terraformrunpolicies.infrastructure.cluster.x-k8s.io',
    );
    expect(first.stdout).toContain('deployment.apps/captf-redis');
    expect(first.stdout).toContain(
      'validatingadmissionpolicy.admissionregistration.k8s.io/captf-controller-runner-identities',
    );
    // Issue 24 item 3: what a runner identity may write among Secrets (its state, its own outputs Secret).
    expect(first.stdout).toContain(
      'validatingadmissionpolicybinding.admissionregistration.k8s.io/captf-runner-secret-writes',
    );
    // Nothing for workload namespaces: the controller gives each object its own runner identity.
    expect(namespaced.map((doc) => `${doc.kind}/${doc.metadata?.name}`)).toEqual([]);
  });
});
