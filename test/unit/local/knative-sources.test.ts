import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  API_SERVER_SOURCES,
  apiServerSourceConfig,
  guessResource,
  pingSourceObject,
  readApiServerSource,
  readPingSource,
  selectorString,
  sourceIdentity,
} from '../../../src/local/knative-sources.ts';

// What Knative's controller would hand its adapters, made from the shipped manifests (issue 12): the
// receive adapter's K_SOURCE_CONFIG as Knative v0.50.0's ApiServerSource reconciler builds it, and the
// PingSource object.

const infra = join(import.meta.dirname, '..', '..', '..', 'infra', 'knative');
const rbac = join(infra, '..', 'rbac');

describe('the ApiServerSource receive adapter config from infra/knative/apiserversource.yaml', () => {
  const source = readApiServerSource(join(infra, 'apiserversource.yaml'));

  it("keeps the manifest's resources, selectors and mode; the empty namespaceSelector watches all namespaces", () => {
    const config = JSON.parse(apiServerSourceConfig(source, ['team-b', 'captf-system', 'team-a']));
    const group = 'infrastructure.cluster.x-k8s.io';
    expect(config).toEqual({
      namespaces: ['captf-system', 'team-a', 'team-b'],
      allNamespaces: true,
      resources: [
        { gvr: { Group: group, Version: 'v1alpha1', Resource: 'terraformclusters' } },
        { gvr: { Group: group, Version: 'v1alpha1', Resource: 'terraformmachines' } },
        { gvr: { Group: group, Version: 'v1alpha1', Resource: 'terraformmachinepools' } },
        { gvr: { Group: group, Version: 'v1alpha1', Resource: 'terraformplans' } },
        { gvr: { Group: 'batch', Version: 'v1', Resource: 'jobs' }, selector: 'captf.io/managed=true' },
        { gvr: { Group: '', Version: 'v1', Resource: 'pods' }, selector: 'captf.io/managed=true' },
        { gvr: { Group: 'cluster.x-k8s.io', Version: 'v1beta2', Resource: 'clusters' } },
        { gvr: { Group: 'cluster.x-k8s.io', Version: 'v1beta2', Resource: 'machines' } },
        { gvr: { Group: 'cluster.x-k8s.io', Version: 'v1beta2', Resource: 'machinepools' } },
      ],
      mode: 'Resource',
    });
  });

  it('without a namespaceSelector the source watches its own namespace only', () => {
    const { namespaceSelector: _all, ...spec } = source.spec;
    const config = JSON.parse(apiServerSourceConfig({ ...source, spec }, ['team-a']));
    expect(config).toMatchObject({ namespaces: ['captf-system'], allNamespaces: false });
  });

  it('a manifest this translation does not cover is refused with the file named', () => {
    expect(() => readApiServerSource(join(infra, 'pingsource.yaml'))).toThrow(/pingsource\.yaml/);
  });
});

describe('the Secret events source from infra/knative/secret-apiserversource.yaml', () => {
  const source = readApiServerSource(join(infra, 'secret-apiserversource.yaml'));

  it('watches Secrets in all namespaces by the opt-in label and by the cluster-name label (Exists), as references', () => {
    const config = JSON.parse(apiServerSourceConfig(source, ['team-a', 'captf-system']));
    const secrets = { Group: '', Version: 'v1', Resource: 'secrets' };
    expect(config).toEqual({
      namespaces: ['captf-system', 'team-a'],
      allNamespaces: true,
      resources: [
        { gvr: secrets, selector: 'captf.io/variables=true' },
        { gvr: secrets, selector: 'cluster.x-k8s.io/cluster-name' },
      ],
      mode: 'Reference',
    });
  });

  it("runs as its own ServiceAccount, defined in infra/rbac/secret-events.yaml, not the objects source's", () => {
    const objects = readApiServerSource(join(infra, API_SERVER_SOURCES.objects.manifest));
    const secretsIdentity = sourceIdentity(source, join(rbac, API_SERVER_SOURCES.secrets.rbac));
    expect(secretsIdentity).toBe('system:serviceaccount:captf-system:captf-secret-events');
    expect(sourceIdentity(objects, join(rbac, API_SERVER_SOURCES.objects.rbac))).not.toBe(secretsIdentity);
    expect(API_SERVER_SOURCES.secrets.manifest).toBe('secret-apiserversource.yaml');
    expect(() => sourceIdentity(source, join(rbac, 'event-source.yaml'))).toThrow(
      /event-source\.yaml defines no ServiceAccount captf-system\/captf-secret-events/,
    );
  });
});

describe('label selectors as apimachinery renders metav1.LabelSelectorAsSelector(s).String()', () => {
  it.each([
    [{}, ''],
    [{ matchLabels: { b: '2', a: '1' } }, 'a=1,b=2'],
    [{ matchExpressions: [{ key: 'k', operator: 'Exists' as const }] }, 'k'],
    [{ matchExpressions: [{ key: 'k', operator: 'DoesNotExist' as const }] }, '!k'],
    [{ matchExpressions: [{ key: 'k', operator: 'In' as const, values: ['z', 'a'] }] }, 'k in (a,z)'],
    [{ matchExpressions: [{ key: 'k', operator: 'NotIn' as const, values: ['x'] }] }, 'k notin (x)'],
    [
      {
        matchLabels: { m: 'v', a: 'w' },
        matchExpressions: [
          { key: 'z', operator: 'Exists' as const },
          { key: 'b', operator: 'DoesNotExist' as const },
        ],
      },
      'a=w,!b,m=v,z',
    ],
  ])('%j → %j', (selector, rendered) => {
    expect(selectorString(selector)).toBe(rendered);
  });
});

describe('a selector this translation does not cover is refused with the file named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'captf-knative-sources-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const base = readApiServerSource(join(infra, 'secret-apiserversource.yaml'));
  let written = 0;
  const withExpression = (expression: Record<string, unknown>): string => {
    written += 1;
    const path = join(dir, `source-${written}.yaml`);
    const resource = { apiVersion: 'v1', kind: 'Secret', selector: { matchExpressions: [expression] } };
    writeFileSync(path, stringify({ ...base, spec: { ...base.spec, resources: [resource] } }));
    return path;
  };

  it.each([
    ['an operator metav1 does not take', { key: 'k', operator: 'Gt', values: ['1'] }, /operator/],
    ['Exists with values', { key: 'k', operator: 'Exists', values: ['x'] }, /take none/],
    ['In without values', { key: 'k', operator: 'In' }, /take values/],
    ['an unknown field', { key: 'k', operator: 'Exists', value: 'x' }, /value/],
  ])('%s', (_what, expression, why) => {
    const path = withExpression(expression);
    expect(() => readApiServerSource(path)).toThrow(new RegExp(path.replaceAll('.', '\\.')));
    expect(() => readApiServerSource(path)).toThrow(why);
  });
});

it.each([
  ['TerraformMachine', 'terraformmachines'],
  ['TerraformMachinePool', 'terraformmachinepools'],
  ['Pod', 'pods'],
  ['Ingress', 'ingresses'],
  ['NetworkPolicy', 'networkpolicies'],
  ['Endpoints', 'endpoints'],
])('guesses the resource of %s as Knative does: %s', (kind, resource) => {
  expect(guessResource(kind)).toBe(resource);
});

it('the PingSource object is the manifest, with a faster schedule for local runs', () => {
  const source = readPingSource(join(infra, 'pingsource.yaml'));
  expect(pingSourceObject(source)).toEqual(source);
  expect(pingSourceObject(source, '@every 2s')).toEqual({
    ...source,
    spec: { ...source.spec, schedule: '@every 2s' },
  });
  expect(source.spec).toMatchObject({ contentType: 'application/json', data: '{}', sink: { uri: '/tick' } });
});
