import { describe, expect, it } from 'vitest';
import { isOrphanedPod, orphanedPodsToDelete } from '../../../src/core/orphaned-pods.ts';
import type { PodView } from '../../../src/core/views.ts';

// What a Job of ours deleted with orphaning leaves (DESIGN.md section 7; src/core/orphaned-pods.ts): its
// pods lose the Job's owner reference and are deleted by us once they no longer run.

interface Shape {
  phase: string;
  node?: boolean;
  owned?: boolean;
  deleting?: boolean;
}

function podOf(name: string, shape: Shape): PodView {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      ...(shape.owned
        ? { ownerReferences: [{ kind: 'Job', name: 'j', uid: 'uid-j', controller: true }] }
        : {}),
      ...(shape.deleting ? { deletionTimestamp: '2026-12-05T12:00:00Z' } : {}),
    },
    ...(shape.node === false ? {} : { spec: { nodeName: 'n1' } }),
    status: { phase: shape.phase },
  };
}

describe('isOrphanedPod', () => {
  it('a pod its Job owns is not orphaned; without a Job owner reference it is', () => {
    expect(isOrphanedPod(podOf('a', { phase: 'Running', owned: true }))).toBe(false);
    expect(isOrphanedPod(podOf('b', { phase: 'Running' }))).toBe(true);
    // Another kind of owner is not the Job's.
    const other = podOf('c', { phase: 'Running' });
    other.metadata.ownerReferences = [{ kind: 'ReplicaSet', name: 'r', uid: 'uid-r' }];
    expect(isOrphanedPod(other)).toBe(true);
  });
});

describe('orphanedPodsToDelete', () => {
  const rows: { name: string; shape: Shape; deleted: boolean }[] = [
    { name: 'succeeded on a node', shape: { phase: 'Succeeded' }, deleted: true },
    { name: 'failed on a node', shape: { phase: 'Failed' }, deleted: true },
    { name: 'pending, no node took it (never ran)', shape: { phase: 'Pending', node: false }, deleted: true },
    { name: 'running on a node: left to end', shape: { phase: 'Running' }, deleted: false },
    { name: 'pending on a node (starting): left to end', shape: { phase: 'Pending' }, deleted: false },
    { name: 'ended, being deleted already', shape: { phase: 'Failed', deleting: true }, deleted: false },
    { name: 'ended, its Job still owns it', shape: { phase: 'Succeeded', owned: true }, deleted: false },
    {
      name: 'never ran, its Job still owns it',
      shape: { phase: 'Pending', node: false, owned: true },
      deleted: false,
    },
  ];
  it.each(rows)('$name: deleted $deleted', ({ name, shape, deleted }) => {
    const pod = podOf(name, shape);
    expect(orphanedPodsToDelete([pod])).toEqual(deleted ? [pod] : []);
  });

  it('keeps the input order', () => {
    const pods = ['x', 'y', 'z'].map((name) => podOf(name, { phase: 'Succeeded' }));
    expect(orphanedPodsToDelete(pods).map((pod) => pod.metadata.name)).toEqual(['x', 'y', 'z']);
  });
});
