import { describe, expect, it } from 'vitest';
import type { CustomObject } from '../../../src/adapters/kube/custom-object.ts';
import type { KubeReader } from '../../../src/adapters/kube/reader.ts';
import {
  capiClusterViewOf,
  clusterMemberViewOf,
  infrastructureTargetOf,
  readCapiContext,
} from '../../../src/step/read-capi.ts';

// What the /events route reads from Cluster API's objects to reach ours (src/step/read-capi.ts): the object
// a Machine or MachinePool names, a Cluster's pause and infrastructure, a member's Paused condition.

const INFRA = 'infrastructure.cluster.x-k8s.io';

function object(spec: unknown, extra: Partial<CustomObject> = {}): CustomObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'X',
    metadata: { name: 'x', namespace: 'team-a', uid: 'u', resourceVersion: '1' },
    spec,
    ...extra,
  };
}

describe('infrastructureTargetOf', () => {
  const rows = [
    {
      id: 'I1',
      name: 'a Machine names our TerraformMachine in spec.infrastructureRef: that object',
      kind: 'Machine' as const,
      spec: { infrastructureRef: { apiGroup: INFRA, kind: 'TerraformMachine', name: 'md-1-abc' } },
      ref: { kind: 'TerraformMachine', namespace: 'team-a', name: 'md-1-abc' },
    },
    {
      id: 'I2',
      name: 'a MachinePool names our pool in spec.template.spec.infrastructureRef: that object',
      kind: 'MachinePool' as const,
      spec: {
        template: {
          spec: { infrastructureRef: { apiGroup: INFRA, kind: 'TerraformMachinePool', name: 'mp' } },
        },
      },
      ref: { kind: 'TerraformMachinePool', namespace: 'team-a', name: 'mp' },
    },
    {
      id: 'I3',
      name: "another provider's machine: nothing",
      kind: 'Machine' as const,
      spec: { infrastructureRef: { apiGroup: INFRA, kind: 'DockerMachine', name: 'd' } },
      ref: undefined,
    },
    {
      id: 'I4',
      name: 'a Machine naming a TerraformMachinePool (wrong kind for a Machine): nothing',
      kind: 'Machine' as const,
      spec: { infrastructureRef: { apiGroup: INFRA, kind: 'TerraformMachinePool', name: 'mp' } },
      ref: undefined,
    },
    {
      id: 'I5',
      name: 'no infrastructureRef: nothing',
      kind: 'MachinePool' as const,
      spec: { template: { spec: {} } },
      ref: undefined,
    },
  ];
  it.each(rows)('$id $name', ({ kind, spec, ref }) => {
    expect(infrastructureTargetOf(kind, 'team-a', object(spec))).toEqual(ref);
  });
});

describe('capiClusterViewOf and clusterMemberViewOf', () => {
  it('C1 a Cluster: spec.paused and status.initialization.infrastructureProvisioned', () => {
    const cluster = object(
      { paused: true },
      { status: { initialization: { infrastructureProvisioned: true } } },
    );
    expect(capiClusterViewOf(cluster)).toEqual({ paused: true, infrastructureProvisioned: true });
    expect(capiClusterViewOf(object({}))).toEqual({ paused: false, infrastructureProvisioned: false });
  });

  it('C2 a member: its pause annotation, Paused condition and waitReason', () => {
    const ref = { kind: 'TerraformMachine' as const, namespace: 'team-a', name: 'x' };
    const member = object(
      {},
      {
        metadata: {
          name: 'x',
          uid: 'u',
          resourceVersion: '1',
          annotations: { 'cluster.x-k8s.io/paused': '' },
        },
        status: { waitReason: 'Paused', conditions: [{ type: 'Paused', status: 'True' }] },
      },
    );
    expect(clusterMemberViewOf(ref, member)).toEqual({
      ref,
      pausedAnnotation: true,
      pausedCondition: 'True',
      waitReason: 'Paused',
    });
    expect(clusterMemberViewOf(ref, object({}))).toEqual({ ref, pausedAnnotation: false });
  });
});

describe('readCapiContext: which machines and pools Cluster API drives', () => {
  // Only the Cluster API reads are answered; the rest of the reader is never called here.
  const reader = {
    getCapiObject: async () => undefined,
    getSecret: async () => undefined,
  } as unknown as KubeReader;
  // The Cluster's view, as read live or found cached (src/step/cluster-facts.ts).
  const capiCluster = capiClusterViewOf(
    object({}, { status: { initialization: { infrastructureProvisioned: true } } }),
  );
  const pool = { kind: 'TerraformMachinePool' as const, namespace: 'team-a', name: 'mp' };
  const meta = (extra: Partial<CustomObject['metadata']>) =>
    object({}, { metadata: { name: 'mp', uid: 'u', resourceVersion: '1', ...extra } });
  const rows = [
    {
      id: 'R1',
      name: 'no owner, not cloned, no cluster label: standalone (no Cluster API view)',
      object: meta({}),
      cluster: capiCluster,
      expected: undefined,
    },
    {
      id: 'R2',
      name: 'written by hand for a MachinePool of an existing Cluster (its label): waits for the owner',
      object: meta({ labels: { 'cluster.x-k8s.io/cluster-name': 'capi' } }),
      cluster: capiCluster,
      expected: { expectsOwner: true, clusterInfrastructureProvisioned: true },
    },
    {
      id: 'R3',
      name: 'labelled with a cluster Cluster API does not know: standalone (a TerraformCluster of its own)',
      object: meta({ labels: { 'cluster.x-k8s.io/cluster-name': 'demo' } }),
      cluster: undefined,
      expected: undefined,
    },
    {
      id: 'R4',
      name: 'cloned from a template, no owner yet: waits for the owner',
      object: meta({ annotations: { 'cluster.x-k8s.io/cloned-from-name': 'tmpl' } }),
      cluster: undefined,
      expected: { expectsOwner: true },
    },
  ];
  it.each(rows)('$id $name', async ({ object: raw, cluster, expected }) => {
    expect(await readCapiContext(reader, pool, raw, Promise.resolve(cluster))).toEqual(expected);
  });

  it('R5 a TerraformCluster is never a member that waits for an owner', async () => {
    const ref = { kind: 'TerraformCluster' as const, namespace: 'team-a', name: 'capi' };
    const raw = meta({ labels: { 'cluster.x-k8s.io/cluster-name': 'capi' } });
    expect(await readCapiContext(reader, ref, raw, Promise.resolve(capiCluster))).toBeUndefined();
  });
});
