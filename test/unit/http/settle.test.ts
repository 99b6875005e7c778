import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { releaseWakes, secretSource } from '../../../src/core/wake.ts';
import { auth, binaryHeaders, T0, testApp } from './in-memory.ts';

// Settling a step (src/settle/settle.ts), seen through the routes that use it: the version a step leaves is
// remembered, so the event of that version (the step's own write) is dropped before any step; a waiting
// object registers under what it waits for, and the step that makes that ready brings its waiters forward.

const cluster: ObjectRef = { kind: 'TerraformCluster', namespace: 'team-a', name: 'demo' };
const machine: ObjectRef = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' };

function resourceEvent(ref: ObjectRef, uid: string, resourceVersion: string, spec: unknown = {}) {
  return {
    method: 'POST' as const,
    url: '/events',
    headers: binaryHeaders('dev.knative.apiserver.resource.update', {
      'ce-subject': `/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/${ref.namespace}/terraformmachines/${ref.name}`,
      'ce-kind': ref.kind,
      'ce-name': ref.name,
      'ce-namespace': ref.namespace,
      'ce-apiversion': 'infrastructure.cluster.x-k8s.io/v1alpha1',
    }),
    payload: JSON.stringify({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: ref.kind,
      metadata: { name: ref.name, namespace: ref.namespace, uid, resourceVersion },
      spec,
    }),
  };
}

describe('settle', () => {
  it('S1 the echo of a step’s own write is dropped before any step', async () => {
    const t = testApp({
      answer: () => ({ action: 'waiting', reason: 'Paused', observed: { uid: 'u1', resourceVersion: '12' } }),
    });
    const first = await t.app.inject({
      method: 'POST',
      url: `/reconcile/TerraformMachine/team-a/m-a`,
      headers: auth,
    });
    expect(first.statusCode).toBe(200);
    expect(t.calls).toHaveLength(1);
    const echo = await t.app.inject(resourceEvent(machine, 'u1', '12'));
    expect(echo.json()).toMatchObject({ handled: false, reason: 'Duplicate' });
    expect(t.calls).toHaveLength(1);
    // A newer version that changes nothing a step reads (a label, a no-op apply) is judged from its copy.
    const same = await t.app.inject(resourceEvent(machine, 'u1', '13'));
    expect(same.json()).toMatchObject({ handled: false, reason: 'Unchanged' });
    const change = await t.app.inject(resourceEvent(machine, 'u1', '14', { variables: { n: 2 } }));
    expect(change.json()).toMatchObject({ handled: true });
    expect(t.calls).toHaveLength(2);
  });

  it('S2 a dry run remembers nothing', async () => {
    const t = testApp({ answer: () => ({ observed: { uid: 'u1', resourceVersion: '12' } }) });
    await t.app.inject({
      method: 'POST',
      url: '/reconcile/TerraformMachine/team-a/m-a?dryRun=true',
      headers: auth,
    });
    expect(t.dedupe.keys.size).toBe(0);
  });

  it('S3 a machine waiting for its cluster is looked at as soon as the cluster’s step makes it ready', async () => {
    const t = testApp({
      answer: (ref) =>
        ref.kind === 'TerraformMachine'
          ? {
              action: 'waiting',
              reason: 'WaitingForDependencies',
              requeueAfterSeconds: 30,
              waitsFor: [cluster],
            }
          : {
              action: 'bookkept',
              reason: 'ApplySucceeded',
              requeueAfterSeconds: 1800,
              wakesDependents: true,
            },
    });
    await t.app.inject({ method: 'POST', url: '/reconcile/TerraformMachine/team-a/m-a', headers: auth });
    expect(t.schedule.dueAt(machine)).toBe(T0 + 30_000);
    await t.app.inject({ method: 'POST', url: '/reconcile/TerraformCluster/team-a/demo', headers: auth });
    expect(t.schedule.dueAt(machine)).toBe(T0);
    expect(t.dependents.waiting.size).toBe(0);
  });

  it('S4 a Secret event wakes the objects waiting for that Secret, with no step and no read of its own', async () => {
    const t = testApp();
    await t.dependents.add(secretSource('team-a', 'vars'), machine);
    await t.dependents.add(secretSource('team-a', 'other'), cluster);
    const event = (name: string) => ({
      method: 'POST' as const,
      url: '/events',
      headers: binaryHeaders('dev.knative.apiserver.ref.update', {
        'ce-subject': `/api/v1/namespaces/team-a/secrets/${name}`,
        'ce-kind': 'Secret',
        'ce-name': name,
        'ce-namespace': 'team-a',
        'ce-apiversion': 'v1',
      }),
      payload: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', name, namespace: 'team-a' }),
    });
    const response = await t.app.inject(event('vars'));
    expect(response.json()).toEqual({ handled: true, woken: [machine] });
    expect(t.schedule.dueAt(machine)).toBe(T0);
    expect(t.schedule.dueAt(cluster)).toBeUndefined();
    expect([t.calls.length, t.versions.reads.length]).toEqual([0, 0]);
    // Taken once: the next event of the same Secret wakes nobody.
    expect((await t.app.inject(event('vars'))).json()).toEqual({ handled: true, woken: [] });
  });

  it('S5 a step that releases leases wakes its lease group, and one waiter per freed slot set', async () => {
    const others = ['m-b', 'm-c'].map((name): ObjectRef => ({ ...machine, name }));
    const t = testApp({
      answer: (ref) =>
        ref.name === 'm-a'
          ? {
              action: 'bookkept',
              reason: 'ApplySucceeded',
              requeueAfterSeconds: 1800,
              wakes: releaseWakes(ref, undefined),
            }
          : {
              action: 'waiting',
              reason: 'WaitingForJobSlot',
              requeueAfterSeconds: 600,
              waitsFor: [{ kind: 'JobSlots', namespace: '', name: '' }],
            },
    });
    for (const ref of others)
      await t.app.inject({
        method: 'POST',
        url: `/reconcile/${ref.kind}/${ref.namespace}/${ref.name}`,
        headers: auth,
      });
    await t.app.inject({ method: 'POST', url: '/reconcile/TerraformMachine/team-a/m-a', headers: auth });
    const due = others.map((ref) => t.schedule.dueAt(ref));
    expect(due.filter((at) => at === T0)).toHaveLength(1);
    expect(due.filter((at) => at === T0 + 600_000)).toHaveLength(1);
  });
});
