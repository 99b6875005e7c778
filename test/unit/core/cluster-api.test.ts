import { describe, expect, it } from 'vitest';
import {
  type CapiClusterView,
  type CapiContext,
  type ClusterMemberView,
  capiWait,
  clusterMembersToWake,
} from '../../../src/core/cluster-api.ts';
import { moduleInputsDigest, moduleInputsOf } from '../../../src/core/module-inputs.ts';
import { runtimeEnv } from '../../../src/runner/runtime-env.ts';

// Issue 11 items 2 and 3: a TerraformMachine Cluster API drives waits for its owner, its Cluster's
// infrastructure and its bootstrap data, in that order; then its module gets the Cluster API inputs.

const owner = {
  kind: 'Machine' as const,
  name: 'md-0-abc12-x7k2p',
  version: 'v1.34.2',
  controlPlane: false,
  failureDomain: 'zone-a',
  bootstrapDataSecretName: 'md-0-abc12-x7k2p-bootstrap',
};
const ready: CapiContext = {
  expectsOwner: false,
  clusterInfrastructureProvisioned: true,
  owner,
  bootstrapData: { value: '#cloud-config\nruncmd: [tok-123-canary]', format: 'cloud-config' },
};

describe('capiWait (the InfraMachine flow)', () => {
  const rows: { id: string; name: string; capi: CapiContext | undefined; reason?: string }[] = [
    { id: 'W1', name: 'a standalone machine (no owner, not cloned) never waits', capi: undefined },
    {
      id: 'W2',
      name: 'cloned from a template, no owner reference yet: WaitingForOwner',
      capi: { expectsOwner: true, clusterInfrastructureProvisioned: true },
      reason: 'WaitingForOwner',
    },
    {
      id: 'W3',
      name: 'owned, the Cluster not provisioned: WaitingForClusterInfrastructure',
      capi: { ...ready, clusterInfrastructureProvisioned: false },
      reason: 'WaitingForClusterInfrastructure',
    },
    {
      id: 'W4',
      name: 'owned, no Cluster API Cluster at all: WaitingForClusterInfrastructure',
      capi: { expectsOwner: false, owner },
      reason: 'WaitingForClusterInfrastructure',
    },
    {
      id: 'W5',
      name: 'the Machine names no bootstrap data yet: WaitingForBootstrapData',
      capi: {
        expectsOwner: false,
        clusterInfrastructureProvisioned: true,
        owner: { ...owner, bootstrapDataSecretName: undefined } as never,
      },
      reason: 'WaitingForBootstrapData',
    },
    {
      id: 'W6',
      name: 'the bootstrap Secret named is missing: WaitingForBootstrapData',
      capi: { expectsOwner: false, clusterInfrastructureProvisioned: true, owner },
      reason: 'WaitingForBootstrapData',
    },
    { id: 'W7', name: 'owner, infrastructure and bootstrap data there: no wait', capi: ready },
  ];
  it.each(rows)('$id $name', ({ capi, reason }) => {
    expect(capiWait('TerraformMachine', capi)?.reason).toBe(reason);
  });

  it('W8 a TerraformCluster never waits for a Machine owner', () => {
    expect(capiWait('TerraformCluster', { expectsOwner: true })).toBeUndefined();
  });

  it('W9 the messages name the owner and never the bootstrap data', () => {
    const wait = capiWait('TerraformMachine', { ...ready, bootstrapData: undefined });
    expect(wait?.message).toContain('md-0-abc12-x7k2p-bootstrap');
    expect(wait?.message).not.toContain('tok-123-canary');
  });
});

describe('moduleInputsOf (the module input contract)', () => {
  const ref = { kind: 'TerraformMachine' as const, namespace: 'team-a', name: 'md-0-abc12-infra' };

  it('an owned machine gets every Cluster API input; bootstrap_data is the one sensitive', () => {
    const inputs = moduleInputsOf({
      ref,
      clusterName: 'demo',
      capi: ready,
      clusterExports: { network_id: 'net-1' },
    });
    expect(inputs).toEqual({
      values: {
        cluster_name: 'demo',
        machine_name: 'md-0-abc12-x7k2p',
        kubernetes_version: 'v1.34.2',
        control_plane: false,
        failure_domain: 'zone-a',
        bootstrap_data: '#cloud-config\nruncmd: [tok-123-canary]',
        bootstrap_format: 'cloud-config',
        cluster_exports: { network_id: 'net-1' },
      },
      sensitive: ['bootstrap_data'],
    });
  });

  it('a standalone machine gets its own name and its cluster; a cluster only its name', () => {
    expect(moduleInputsOf({ ref, clusterName: 'demo' }).values).toEqual({
      cluster_name: 'demo',
      machine_name: 'md-0-abc12-infra',
    });
    expect(moduleInputsOf({ ref: { ...ref, kind: 'TerraformCluster' }, clusterName: 'demo' }).values).toEqual(
      {
        cluster_name: 'demo',
      },
    );
  });

  it('a pool gets replicas from its MachinePool, and no machine_name', () => {
    const pool = moduleInputsOf({
      ref: { ...ref, kind: 'TerraformMachinePool' },
      capi: { ...ready, owner: { ...owner, kind: 'MachinePool', replicas: 3 } },
    });
    expect(pool.values.replicas).toBe(3);
    expect(pool.values).not.toHaveProperty('machine_name');
  });

  it('the digest covers what Cluster API hands over, not the name and label; none for a standalone object', () => {
    expect(moduleInputsDigest(moduleInputsOf({ ref, clusterName: 'demo' }))).toBeUndefined();
    const before = moduleInputsDigest(moduleInputsOf({ ref, capi: ready }));
    const upgraded = moduleInputsDigest(
      moduleInputsOf({ ref, capi: { ...ready, owner: { ...owner, version: 'v1.35.0' } } }),
    );
    const rotated = moduleInputsDigest(
      moduleInputsOf({ ref, capi: { ...ready, bootstrapData: { value: 'other', format: 'cloud-config' } } }),
    );
    expect(new Set([before, upgraded, rotated]).size).toBe(3);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(before).not.toContain('tok-123-canary');
  });
});

describe('runtimeEnv: contract inputs as TF_VAR_', () => {
  it('strings as they are, other values as JSON (an HCL expression for typed variables)', () => {
    const env = runtimeEnv({ PATH: '/bin' }, '/tmp/x', {
      machine_name: 'm-a',
      control_plane: true,
      cluster_exports: { network_id: 'net-1' },
    });
    expect(env).toMatchObject({
      PATH: '/bin',
      TF_VAR_machine_name: 'm-a',
      TF_VAR_control_plane: 'true',
      TF_VAR_cluster_exports: '{"network_id":"net-1"}',
    });
  });
});

describe('clusterMembersToWake (a Cluster change reaches the objects it outdated)', () => {
  const unpaused = { paused: false, infrastructureProvisioned: true };
  const paused = { paused: true, infrastructureProvisioned: true };
  const rows: {
    id: string;
    name: string;
    cluster: CapiClusterView;
    member: Omit<ClusterMemberView<string>, 'ref'>;
    woken: boolean;
  }[] = [
    {
      id: 'K1',
      name: 'paused Cluster, member shows Paused False: woken',
      cluster: paused,
      member: { pausedAnnotation: false, pausedCondition: 'False' },
      woken: true,
    },
    {
      id: 'K2',
      name: 'paused Cluster, member already shows Paused True: not woken (a replayed event costs nothing)',
      cluster: paused,
      member: { pausedAnnotation: false, pausedCondition: 'True', waitReason: 'Paused' },
      woken: false,
    },
    {
      id: 'K3',
      name: 'unpaused Cluster, member still waits as Paused: woken',
      cluster: unpaused,
      member: { pausedAnnotation: false, pausedCondition: 'True', waitReason: 'Paused' },
      woken: true,
    },
    {
      id: 'K4',
      name: 'unpaused Cluster, member paused by its own annotation: not woken',
      cluster: unpaused,
      member: { pausedAnnotation: true, pausedCondition: 'True', waitReason: 'Paused' },
      woken: false,
    },
    {
      id: 'K5',
      name: 'infrastructure now provisioned, member waits for it: woken',
      cluster: unpaused,
      member: {
        pausedAnnotation: false,
        pausedCondition: 'False',
        waitReason: 'WaitingForClusterInfrastructure',
      },
      woken: true,
    },
    {
      id: 'K6',
      name: 'infrastructure not provisioned, member waits for it: not woken',
      cluster: { paused: false, infrastructureProvisioned: false },
      member: {
        pausedAnnotation: false,
        pausedCondition: 'False',
        waitReason: 'WaitingForClusterInfrastructure',
      },
      woken: false,
    },
    {
      id: 'K7',
      name: 'a member never stepped (no Paused condition) is left to its own creation event',
      cluster: paused,
      member: { pausedAnnotation: false },
      woken: false,
    },
    {
      id: 'K8',
      name: 'an up-to-date member of a settled Cluster: not woken',
      cluster: unpaused,
      member: { pausedAnnotation: false, pausedCondition: 'False' },
      woken: false,
    },
  ];
  it.each(rows)('$id $name', ({ cluster, member, woken }) => {
    expect(clusterMembersToWake(cluster, [{ ref: 'm', ...member }])).toEqual(woken ? ['m'] : []);
  });
});
