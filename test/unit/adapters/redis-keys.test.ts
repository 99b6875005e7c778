import { describe, expect, it } from 'vitest';
import { KeyLayout, SCHEDULE_SHARDS } from '../../../src/adapters/redis/keys.ts';
import { type RunLeaseRole, runLeaseRoleOf } from '../../../src/adapters/redis/run-lease.ts';
import type { ObjectKind } from '../../../src/core/object-ref.ts';
import type { Op } from '../../../src/schemas/result.ts';

/** The part of a key Redis Cluster hashes: the first non-empty `{…}` section, else the whole key. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

const keys = new KeyLayout('captf');
const machine = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' };
const cluster = { kind: 'TerraformCluster', namespace: 'team-a', name: 'c-a' };

describe('KeyLayout', () => {
  it('a cluster and its machines share one hash slot for every lease key (one script checks both)', () => {
    const machineKeys = keys.leaseGroup(machine, 'cl-1');
    const clusterKeys = keys.leaseGroup(cluster, 'cl-1');
    const tags = new Set([...Object.values(machineKeys), ...Object.values(clusterKeys)].map(hashTagOf));
    expect([...tags]).toEqual(['capi:team-a/cl-1']);
    expect(machineKeys.run).not.toBe(clusterKeys.run);
  });

  it('an object without a cluster is its own lease group; the step lock is per object', () => {
    expect(hashTagOf(keys.leaseGroup(machine, undefined).run)).toBe('obj:TerraformMachine/team-a/m-a');
    expect(hashTagOf(keys.stepLock(machine))).toBe('obj:TerraformMachine/team-a/m-a');
    expect(keys.stepLock(machine)).not.toBe(keys.stepLock({ ...machine, kind: 'TerraformMachinePool' }));
  });

  it('all slot counters share one hash slot (one script checks installation and cluster limits)', () => {
    expect(hashTagOf(keys.installationSlots())).toBe(hashTagOf(keys.clusterSlots('team-a', 'cl-1')));
  });

  it('a schedule member always maps to the same one of the fixed shards', () => {
    const member = 'TerraformMachine/team-a/m-a';
    expect(keys.scheduleShardOf(member)).toBe(new KeyLayout('captf').scheduleShardOf(member));
    const shards = new Set(
      Array.from({ length: 200 }, (_, index) => keys.scheduleShardOf(`TerraformMachine/team-a/m-${index}`)),
    );
    expect(shards.size).toBe(SCHEDULE_SHARDS);
  });
});

const roles: {
  id: string;
  name: string;
  kind: ObjectKind;
  op: Op;
  clusterName?: string;
  role: RunLeaseRole;
}[] = [
  {
    id: 'L01',
    name: 'a cluster apply takes the cluster lease',
    kind: 'TerraformCluster',
    op: 'apply',
    clusterName: 'cl',
    role: 'cluster-writer',
  },
  {
    id: 'L02',
    name: 'a cluster destroy takes the cluster lease',
    kind: 'TerraformCluster',
    op: 'destroy',
    clusterName: 'cl',
    role: 'cluster-writer',
  },
  {
    id: 'L03',
    name: 'a cluster drift check takes its run lease only',
    kind: 'TerraformCluster',
    op: 'drift',
    clusterName: 'cl',
    role: 'solo',
  },
  {
    id: 'L04',
    name: 'a machine apply registers with its cluster',
    kind: 'TerraformMachine',
    op: 'apply',
    clusterName: 'cl',
    role: 'member-writer',
  },
  {
    id: 'L05',
    name: 'a pool destroy registers with its cluster',
    kind: 'TerraformMachinePool',
    op: 'destroy',
    clusterName: 'cl',
    role: 'member-writer',
  },
  {
    id: 'L06',
    name: 'a machine refresh yields to the cluster but does not block it',
    kind: 'TerraformMachine',
    op: 'refresh',
    clusterName: 'cl',
    role: 'member-reader',
  },
  {
    id: 'L07',
    name: 'a machine without a Cluster API cluster is on its own',
    kind: 'TerraformMachine',
    op: 'apply',
    role: 'solo',
  },
];

describe('runLeaseRoleOf', () => {
  it.each(roles)('$id $name', ({ kind, op, clusterName, role }) => {
    expect(runLeaseRoleOf(kind, op, clusterName)).toBe(role);
  });
});
