import { describe, expect, it } from 'vitest';
import {
  isOrphanedPod,
  jobUidLabelOf,
  jobUidOfPod,
  orphanedPodsToDelete,
} from '../../../src/core/orphaned-pods.ts';
import { podsOfJob } from '../../../src/core/pods.ts';
import type { JobView, PodView } from '../../../src/core/views.ts';

// What a Job of ours deleted with orphaning leaves (DESIGN.md section 7; src/core/orphaned-pods.ts): its
// pods lose the Job's owner reference and are deleted by us once OpenTofu does not run in them.

const OURS = { 'captf.io/managed': 'true', 'captf.io/owner-uid': 'uid-object' };
const JOB_UID = 'uid-j';

interface Shape {
  phase?: string;
  node?: boolean;
  /** `job`: its Job controls it; `other`: another controller does; `none`: orphaned. */
  owner?: 'job' | 'other' | 'none';
  deleting?: boolean;
  labels?: Record<string, string>;
  uid?: boolean;
}

function podOf(name: string, shape: Shape): PodView {
  const owner = shape.owner ?? 'none';
  return {
    metadata: {
      name,
      ...(shape.uid === false ? {} : { uid: `uid-${name}` }),
      labels: shape.labels ?? { ...OURS, 'batch.kubernetes.io/controller-uid': JOB_UID },
      ...(owner === 'none'
        ? {}
        : {
            ownerReferences: [
              owner === 'job'
                ? { kind: 'Job', name: 'j', uid: JOB_UID, controller: true }
                : { kind: 'ReplicaSet', name: 'r', uid: 'uid-r', controller: true },
            ],
          }),
      ...(shape.deleting ? { deletionTimestamp: '2026-12-05T12:00:00Z' } : {}),
    },
    ...(shape.node === false ? {} : { spec: { nodeName: 'n1' } }),
    ...(shape.phase === undefined ? {} : { status: { phase: shape.phase } }),
  };
}

describe('isOrphanedPod', () => {
  it.each([
    { name: 'its Job controls it', shape: { owner: 'job' }, orphaned: false },
    { name: 'another controller owns it (not ours to judge)', shape: { owner: 'other' }, orphaned: false },
    { name: 'no controller: its Job was deleted with orphaning', shape: { owner: 'none' }, orphaned: true },
    { name: 'not labelled ours', shape: { labels: { app: 'web' } }, orphaned: false },
    {
      name: 'managed but naming no object of ours',
      shape: { labels: { 'captf.io/managed': 'true' } },
      orphaned: false,
    },
  ] as { name: string; shape: Shape; orphaned: boolean }[])('$name: $orphaned', ({ shape, orphaned }) => {
    expect(isOrphanedPod(podOf('p', shape))).toBe(orphaned);
  });

  it("reads the Job's UID from the Job controller's label, either spelling", () => {
    expect(jobUidLabelOf(podOf('p', {}))).toBe(JOB_UID);
    expect(jobUidLabelOf(podOf('p', { labels: { ...OURS, 'controller-uid': 'old' } }))).toBe('old');
    expect(jobUidLabelOf(podOf('p', { labels: OURS }))).toBeUndefined();
  });
});

describe('jobUidOfPod: the one answer to which Job a pod is one of', () => {
  it.each([
    {
      name: 'owned by its Job: the owner, whatever the label says',
      shape: { owner: 'job', labels: { ...OURS, 'batch.kubernetes.io/controller-uid': 'stale' } },
      uid: JOB_UID,
    },
    { name: 'ours and orphaned: the Job its label names', shape: { owner: 'none' }, uid: JOB_UID },
    { name: 'another controller owns it: no Job', shape: { owner: 'other' }, uid: undefined },
    {
      name: 'orphaned but not ours: no Job',
      shape: { labels: { 'batch.kubernetes.io/controller-uid': JOB_UID } },
      uid: undefined,
    },
    { name: 'ours, orphaned, without the label: no Job', shape: { labels: OURS }, uid: undefined },
  ] as { name: string; shape: Shape; uid: string | undefined }[])('$name', ({ shape, uid }) => {
    expect(jobUidOfPod(podOf('p', shape))).toBe(uid);
  });
});

describe('orphanedPodsToDelete', () => {
  const none = new Set<string>();
  const rows: { name: string; shape: Shape; deleted: boolean }[] = [
    { name: 'succeeded on a node', shape: { phase: 'Succeeded' }, deleted: true },
    { name: 'failed on a node', shape: { phase: 'Failed' }, deleted: true },
    { name: 'pending, no node took it (never ran)', shape: { phase: 'Pending', node: false }, deleted: true },
    { name: 'pending on a node (source never started)', shape: { phase: 'Pending' }, deleted: true },
    { name: 'no phase yet (just created)', shape: { node: false }, deleted: true },
    { name: 'running on a node: left to end', shape: { phase: 'Running' }, deleted: false },
    { name: 'unknown (a lost node): left to end', shape: { phase: 'Unknown' }, deleted: false },
    { name: 'ended, being deleted already', shape: { phase: 'Failed', deleting: true }, deleted: false },
    { name: 'ended, its Job still controls it', shape: { phase: 'Succeeded', owner: 'job' }, deleted: false },
    {
      name: 'ended, another controller owns it',
      shape: { phase: 'Succeeded', owner: 'other' },
      deleted: false,
    },
    { name: 'ended, read without a UID', shape: { phase: 'Succeeded', uid: false }, deleted: false },
  ];
  it.each(rows)('$name: deleted $deleted', ({ name, shape, deleted }) => {
    const pod = podOf(name, shape);
    expect(orphanedPodsToDelete([pod], none)).toEqual(deleted ? [pod] : []);
  });

  it('an orphaned pod whose Job is still listed waits for that Job (its bookkeeping reads the pod)', () => {
    const pod = podOf('p', { phase: 'Succeeded' });
    expect(orphanedPodsToDelete([pod], new Set([JOB_UID]))).toEqual([]);
    expect(orphanedPodsToDelete([pod], new Set(['uid-another-job']))).toEqual([pod]);
  });

  it('keeps the input order', () => {
    const pods = ['x', 'y', 'z'].map((name) => podOf(name, { phase: 'Succeeded' }));
    expect(orphanedPodsToDelete(pods, none).map((pod) => pod.metadata.name)).toEqual(['x', 'y', 'z']);
  });
});

describe('podsOfJob', () => {
  const job: JobView = { metadata: { name: 'j', uid: JOB_UID } } as JobView;
  it('a pod orphaned while its Job is still listed is still that Job’s; another Job’s is not', () => {
    const orphaned = podOf('orphaned', { phase: 'Succeeded' });
    const owned = podOf('owned', { phase: 'Succeeded', owner: 'job' });
    const other = podOf('other', {
      phase: 'Succeeded',
      labels: { ...OURS, 'batch.kubernetes.io/controller-uid': 'uid-k' },
    });
    expect(podsOfJob(job, [orphaned, owned, other]).map((pod) => pod.metadata.name)).toEqual([
      'orphaned',
      'owned',
    ]);
  });
});
