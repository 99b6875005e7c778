import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  apiServerSourceConfig,
  guessResource,
  pingSourceObject,
  readApiServerSource,
  readPingSource,
} from '../../../src/local/knative-sources.ts';

// What Knative's controller would hand its adapters, made from the shipped manifests (issue 12): the
// receive adapter's K_SOURCE_CONFIG as Knative v0.50.0's ApiServerSource reconciler builds it, and the
// PingSource object.

const infra = join(import.meta.dirname, '..', '..', '..', 'infra', 'knative');

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
