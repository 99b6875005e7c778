import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { fullSlotScopes } from '../../../src/core/slot-shares.ts';
import {
  fullJobSlotSources,
  jobSlotSources,
  releaseWakes,
  runLeasesSource,
  secretSource,
} from '../../../src/core/wake.ts';

// What wakes a waiting object (DESIGN.md section 6, src/core/wake.ts): the sources a wait registers under
// and those the release of a finished Job's leases and slots wakes must name the same thing.

const machine: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' };

describe('wake sources', () => {
  it('W1 a lease wait and the release of a Job of the same lease group name one source', () => {
    const other: ObjectRef = { ...machine, name: 'm-b' };
    const released = releaseWakes(other, 'demo').map((wake) => wake.source);
    expect(released).toContainEqual(runLeasesSource(machine, 'demo'));
    // Without a cluster the group is the object itself: another object's release does not wake it.
    expect(releaseWakes(other, undefined).map((wake) => wake.source)).not.toContainEqual(
      runLeasesSource(machine, undefined),
    );
    expect(releaseWakes(machine, undefined).map((wake) => wake.source)).toContainEqual(
      runLeasesSource(machine, undefined),
    );
  });

  it('W2 a slot wait registers under every slot set a start needs; a release frees one waiter of each', () => {
    expect(jobSlotSources('team-a', 'demo')).toEqual([
      { kind: 'JobSlots', namespace: '', name: '' },
      { kind: 'JobSlots', namespace: 'team-a', name: 'demo' },
    ]);
    const slotWakes = releaseWakes(machine, 'demo').filter((wake) => wake.source.kind === 'JobSlots');
    expect(slotWakes).toEqual(jobSlotSources('team-a', 'demo').map((source) => ({ source, limit: 1 })));
    // The lease group's waiters all go: a few objects of one cluster.
    expect(releaseWakes(machine, 'demo').find((wake) => wake.source.kind === 'RunLeases')).not.toHaveProperty(
      'limit',
    );
  });

  it('W2b a slot wait registers only under the slot sets found full: a freed installation slot does not wake a start its cluster holds back', () => {
    const installation = { kind: 'JobSlots', namespace: '', name: '' };
    const cluster = { kind: 'JobSlots', namespace: 'team-a', name: 'demo' };
    const usage = (installationActive: number, clusterActive: number) => ({
      installationActive,
      installationLimit: 200,
      clusterActive,
      clusterLimit: 20,
    });
    expect(fullSlotScopes('apply', usage(20, 20))).toEqual(['cluster']);
    expect(fullSlotScopes('apply', usage(200, 3))).toEqual(['installation']);
    expect(fullSlotScopes('apply', usage(200, 20))).toEqual(['installation', 'cluster']);
    expect(fullSlotScopes('apply', usage(159, 15))).toEqual([]);
    // Drift and refresh find a set full at 80 % of its limit.
    expect(fullSlotScopes('drift', usage(160, 15))).toEqual(['installation']);
    expect(fullJobSlotSources('team-a', 'demo', ['cluster'])).toEqual([cluster]);
    expect(fullJobSlotSources('team-a', 'demo', ['installation'])).toEqual([installation]);
    expect(fullJobSlotSources('team-a', 'demo', ['installation', 'cluster'])).toEqual([
      installation,
      cluster,
    ]);
    // None known full (or the cluster's, of an object of no cluster): every set, never no wake at all.
    expect(fullJobSlotSources('team-a', 'demo', [])).toEqual([installation, cluster]);
    expect(fullJobSlotSources('team-a', undefined, ['cluster'])).toEqual([installation]);
  });

  it('W3 a Secret is named by its namespace and name', () => {
    expect(secretSource('team-a', 'vars')).toEqual({ kind: 'Secret', namespace: 'team-a', name: 'vars' });
  });
});
