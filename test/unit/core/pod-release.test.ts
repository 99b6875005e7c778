import { describe, expect, it } from 'vitest';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { buildJobManifest } from '../../../src/core/job-manifest.ts';
import {
  decidePodRelease,
  heldPodOf,
  heldPodOwnerGone,
  type PodReleaseDecision,
  podsToRelease,
  type ReleaseJobView,
  type ReleasePodView,
} from '../../../src/core/pod-release.ts';
import { resolveJobsPolicy } from '../../../src/schemas/kinds/jobs-policy.ts';

const OURS = 'captf.io/result';

function podOf(
  jobUid: string | undefined,
  finalizers: string[] = [OURS, 'batch.kubernetes.io/job-tracking'],
  deleted = true,
) {
  return {
    metadata: {
      name: `pod-of-${jobUid ?? 'none'}`,
      ...(deleted ? { deletionTimestamp: '2026-11-29T12:05:00Z' } : {}),
      finalizers,
      ownerReferences: jobUid === undefined ? [] : [{ kind: 'Job', name: `job-${jobUid}`, uid: jobUid }],
    },
  } satisfies ReleasePodView;
}

/** A deleted pod of ours whose Job `jobUid` was deleted with orphaning: no owner, the Job controller's label. */
function orphanOf(jobUid: string): ReleasePodView {
  const { metadata } = podOf(undefined);
  return {
    metadata: {
      ...metadata,
      labels: {
        'captf.io/managed': 'true',
        'captf.io/owner-uid': 'obj-uid',
        'batch.kubernetes.io/controller-uid': jobUid,
      },
    },
  };
}

const job = (uid: string, fields: Partial<Omit<ReleaseJobView, 'uid'>> = {}): ReleaseJobView => ({
  uid,
  bookkept: false,
  finished: false,
  deleting: false,
  ...fields,
});

interface Row {
  id: string;
  name: string;
  pod: ReleasePodView;
  jobs: ReleaseJobView[];
  pruning?: string[];
  ownerGone?: boolean;
  expected: PodReleaseDecision;
}

const rows: Row[] = [
  {
    id: 'R1',
    name: 'a pod without our finalizer has nothing to release',
    pod: podOf('j1', ['batch.kubernetes.io/job-tracking']),
    jobs: [job('j1', { bookkept: true, finished: true })],
    expected: { kind: 'keep', reason: 'NoFinalizer' },
  },
  {
    id: 'R2 (C07)',
    name: 'a deleted pod of a finished Job not yet bookkept keeps its result',
    pod: podOf('j1'),
    jobs: [job('j1', { finished: true })],
    expected: { kind: 'keep', reason: 'AwaitingBookkeeping' },
  },
  {
    id: 'R3',
    name: 'a pod of a running Job keeps it',
    pod: podOf('j1'),
    jobs: [job('j1')],
    expected: { kind: 'keep', reason: 'AwaitingBookkeeping' },
  },
  {
    id: 'R4',
    name: 'a deleted pod of a bookkept Job is released',
    pod: podOf('j1'),
    jobs: [job('j1', { bookkept: true, finished: true })],
    expected: { kind: 'release', reason: 'JobBookkept' },
  },
  {
    id: 'R4b',
    name: 'a live pod of a bookkept Job keeps it until its Job goes (no write per run)',
    pod: podOf('j1', [OURS], false),
    jobs: [job('j1', { bookkept: true, finished: true })],
    expected: { kind: 'keep', reason: 'NotDeleted' },
  },
  {
    id: 'R5 (C14)',
    name: 'a pod whose Job is gone is released',
    pod: podOf('j-deleted'),
    jobs: [job('j1')],
    expected: { kind: 'release', reason: 'JobGone' },
  },
  {
    id: 'R6',
    name: 'a pod orphaned by its Job (no Job owner reference) is released',
    pod: podOf(undefined),
    jobs: [job('j1')],
    expected: { kind: 'release', reason: 'JobGone' },
  },
  {
    id: 'R6b',
    name: 'a pod of ours orphaned while its finished Job is still listed keeps its result for that Job (its UID label)',
    pod: orphanOf('j1'),
    jobs: [job('j1', { finished: true })],
    expected: { kind: 'keep', reason: 'AwaitingBookkeeping' },
  },
  {
    id: 'R6c',
    name: 'an orphaned pod of ours whose Job is gone as well is released',
    pod: orphanOf('j-deleted'),
    jobs: [job('j1', { finished: true })],
    expected: { kind: 'release', reason: 'JobGone' },
  },
  {
    id: 'R7 (C13)',
    name: 'a pod of a Job being pruned is released',
    pod: podOf('j1', [OURS], false),
    jobs: [job('j1', { bookkept: true, finished: true })],
    pruning: ['j1'],
    expected: { kind: 'release', reason: 'JobPruned' },
  },
  {
    id: 'R8',
    name: 'a pod of an unfinished Job being deleted (Foreground) is released: that Job never finishes',
    pod: podOf('j1'),
    jobs: [job('j1', { deleting: true })],
    expected: { kind: 'release', reason: 'JobDeleting' },
  },
  {
    id: 'R9',
    name: 'a pod of a finished, un-bookkept Job being deleted keeps its result for bookkeeping',
    pod: podOf('j1'),
    jobs: [job('j1', { deleting: true, finished: true })],
    expected: { kind: 'keep', reason: 'AwaitingBookkeeping' },
  },
  {
    id: 'R10',
    name: 'a pod of an object whose finalizer goes in this pass is released, even a live one of a kept Job',
    pod: podOf('j1', [OURS], false),
    jobs: [job('j1', { bookkept: true, finished: true })],
    ownerGone: true,
    expected: { kind: 'release', reason: 'OwnerGone' },
  },
  {
    id: 'R11',
    name: 'an owner leaving our care releases nothing that is not ours',
    pod: podOf('j1', ['batch.kubernetes.io/job-tracking']),
    jobs: [],
    ownerGone: true,
    expected: { kind: 'keep', reason: 'NoFinalizer' },
  },
];

describe('decidePodRelease (our pod finalizer, DESIGN.md section 7: never a lost result)', () => {
  it.each(rows)('$id $name', ({ pod, jobs, pruning, ownerGone, expected }) => {
    const byUid = new Map(jobs.map((j) => [j.uid, j]));
    expect(decidePodRelease(pod, byUid, new Set(pruning ?? []), ownerGone)).toEqual(expected);
  });
});

describe('heldPodOf (which pod events make the step release, issue 23 item 2)', () => {
  const held = {
    name: 'captf-m-m-a-apply-a1-abcdef-x7k2p',
    labels: { 'captf.io/owner-uid': 'uid-1', 'job-name': 'captf-m-m-a-apply-a1-abcdef' },
    deletionTimestamp: '2026-12-03T04:00:00Z',
    finalizers: ['batch.kubernetes.io/job-tracking', OURS],
  };
  const rows = [
    {
      id: 'H1',
      name: 'a pod being deleted with our finalizer is held: its step reads the pods',
      meta: held,
      expected: { name: held.name, ownerUid: 'uid-1' },
    },
    {
      id: 'H2',
      name: 'a live pod is not (every event of a running Job stays as cheap as before)',
      meta: { ...held, deletionTimestamp: undefined },
      expected: undefined,
    },
    {
      id: 'H3',
      name: 'a deleted pod already released is not',
      meta: { ...held, finalizers: ['batch.kubernetes.io/job-tracking'] },
      expected: undefined,
    },
    {
      id: 'H4',
      name: 'a pod without the owner UID label is not ours to judge',
      meta: { ...held, labels: { 'job-name': 'x' } },
      expected: undefined,
    },
    {
      id: 'H5',
      name: 'no metadata (a reference-mode payload) says nothing',
      meta: undefined,
      expected: undefined,
    },
  ];
  it.each(rows)('$id $name', ({ meta, expected }) => {
    expect(heldPodOf(meta)).toEqual(expected);
  });

  it('H6 its owner is gone when no object of the name exists or the one that does has another UID', () => {
    const pod = { name: 'p', ownerUid: 'uid-1' };
    expect(heldPodOwnerGone(pod, undefined)).toBe(true);
    expect(heldPodOwnerGone(pod, 'uid-2')).toBe(true);
    expect(heldPodOwnerGone(pod, 'uid-1')).toBe(false);
  });
});

describe('podsToRelease', () => {
  it('returns only the pods to release, in input order, each with its reason', () => {
    const pods = [podOf('gone'), podOf('running'), podOf('booked'), podOf('booked', [])];
    const released = podsToRelease({
      pods,
      jobs: [job('running'), job('booked', { bookkept: true, finished: true })],
    });
    expect(released.map((r) => [r.pod.metadata.name, r.reason])).toEqual([
      ['pod-of-gone', 'JobGone'],
      ['pod-of-booked', 'JobBookkept'],
    ]);
    expect(released[0]?.pod).toBe(pods[0]);
  });
});

describe('the Job template carries the finalizer', () => {
  it('every pod the Job controller creates holds its result until released (template finalizers are copied)', () => {
    const manifest = buildJobManifest({
      owner: {
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'TerraformMachine',
        name: 'm-a',
        namespace: 'team-a',
        uid: 'uid-1',
        generation: 1,
      },
      name: 'captf-m-m-a-apply-a1-abcdef',
      op: 'apply',
      attempt: 1,
      inputsHash: 'h1',
      image: 'registry.example.com/m:1',
      runnerImage: 'registry.example.com/captf-runner:0.1.0',
      policy: resolveJobsPolicy({}),
      serviceAccountName: 'captf-runner-m-m-a',
    });
    expect(manifest.spec.template.metadata.finalizers).toEqual([POD_RESULT_FINALIZER]);
    expect(POD_RESULT_FINALIZER).toBe(OURS);
  });
});
