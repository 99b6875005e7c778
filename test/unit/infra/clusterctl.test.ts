import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import {
  CLUSTERCTL_FILES,
  componentsProblems,
  metadataYaml,
  RELEASE_SERIES,
} from '../../../scripts/clusterctl.ts';
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
}

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

  it('the components are what clusterctl init takes as they are: one Namespace, no variables, every object labelled', () => {
    expect(componentsProblems(committed(CLUSTERCTL_FILES.components))).toEqual([]);
  });

  it('the components hold every object of infra/kustomization.yaml’s files, as written there', () => {
    const components = new Map(
      documents(committed(CLUSTERCTL_FILES.components)).map((d) => [identity(d), d]),
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
      const labelled = {
        ...doc,
        metadata: { ...doc.metadata, labels: { ...doc.metadata.labels, ...labels } },
      };
      expect(rendered, `${identity(doc)} is stale: ${REGENERATE}`).toEqual(labelled);
    }
    // The rest is what kustomize generates itself (the captf-images ConfigMap).
    expect(components.size - expected.length).toBe(1);
  });
});
