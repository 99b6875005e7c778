import { describe, expect, it } from 'vitest';
import {
  compareResourceVersions,
  jobEventVerdict,
  objectDigest,
  objectEventVerdict,
  podEventVerdict,
  type SeenObject,
} from '../../../src/core/event-relevance.ts';
import { ANNOTATIONS, LABELS, POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import type { JobView, PodView } from '../../../src/core/views.ts';

const complete = { type: 'Complete', status: 'True' };

function job(status: JobView['status'], annotations: Record<string, string> = {}, deleting = false): JobView {
  return {
    metadata: { name: 'j', annotations, ...(deleting ? { deletionTimestamp: '2026-12-03T00:00:00Z' } : {}) },
    status,
  };
}

describe('jobEventVerdict', () => {
  it.each([
    ['a running Job', 'update', job({ active: 1 }), { matters: false, reason: 'JobRunning' }],
    ['a Job created', 'add', job({}), { matters: false, reason: 'JobRunning' }],
    ['a finished Job not bookkept', 'update', job({ conditions: [complete] }), { matters: true }],
    [
      'a finished Job bookkept',
      'update',
      job({ conditions: [complete] }, { [ANNOTATIONS.bookkept]: 'true' }),
      { matters: false, reason: 'JobBookkept' },
    ],
    ['a Job deleted', 'delete', job({ active: 1 }), { matters: true }],
    ['a Job being deleted', 'update', job({ active: 1 }, {}, true), { matters: true }],
    [
      'a failed condition that is False',
      'update',
      job({ conditions: [{ type: 'Failed', status: 'False' }] }),
      { matters: false, reason: 'JobRunning' },
    ],
  ] as const)('%s', (_name, verb, view, verdict) => {
    expect(jobEventVerdict(verb, view)).toEqual(verdict);
  });
});

function pod(meta: Partial<PodView['metadata']>, status: PodView['status'] = {}): PodView {
  return { metadata: { name: 'p', labels: { [LABELS.ownerUid]: 'u1' }, ...meta }, status };
}

describe('podEventVerdict', () => {
  it('a running pod or one that ended changes nothing the step reads', () => {
    expect(podEventVerdict('update', pod({}, { phase: 'Running' }))).toEqual({
      matters: false,
      reason: 'PodUneventful',
    });
    expect(
      podEventVerdict('update', pod({ finalizers: [POD_RESULT_FINALIZER] }, { phase: 'Succeeded' })),
    ).toEqual({
      matters: false,
      reason: 'PodUneventful',
    });
  });
  it('a pod deleted while it holds our finalizer, or one that cannot start, starts a step', () => {
    expect(
      podEventVerdict(
        'update',
        pod({ finalizers: [POD_RESULT_FINALIZER], deletionTimestamp: '2026-12-03T00:00:00Z' }),
      ),
    ).toEqual({ matters: true });
    const waiting = (reason: string) => ({
      phase: 'Pending',
      containerStatuses: [{ name: 'source', state: { waiting: { reason } } }],
    });
    expect(podEventVerdict('update', pod({}, waiting('ImagePullBackOff')))).toEqual({ matters: true });
    expect(podEventVerdict('update', pod({}, waiting('CreateContainerConfigError')))).toEqual({
      matters: true,
    });
    expect(podEventVerdict('update', pod({}, waiting('ContainerCreating')))).toEqual({
      matters: false,
      reason: 'PodUneventful',
    });
  });
  it('an orphaned pod of ours that no longer runs starts a step (its Job was deleted with orphaning); running, it does not', () => {
    const orphan = (phase: string) =>
      pod({ uid: 'pod-uid', labels: { [LABELS.managed]: 'true', [LABELS.ownerUid]: 'u1' } }, { phase });
    expect(podEventVerdict('update', orphan('Succeeded'))).toEqual({ matters: true });
    expect(podEventVerdict('update', orphan('Failed'))).toEqual({ matters: true });
    expect(podEventVerdict('update', orphan('Pending'))).toEqual({ matters: true });
    expect(podEventVerdict('update', orphan('Running'))).toEqual({ matters: false, reason: 'PodUneventful' });
    // The same pod its Job still controls: its end reaches the step through the Job's event.
    const owned = orphan('Succeeded');
    owned.metadata.ownerReferences = [{ kind: 'Job', name: 'j', uid: 'j1', controller: true }];
    expect(podEventVerdict('update', owned)).toEqual({ matters: false, reason: 'PodUneventful' });
  });
  it('a pod that is gone starts a step: it may end a wait for an earlier attempt whose Job was deleted', () => {
    expect(podEventVerdict('delete', pod({}, { phase: 'Failed' }))).toEqual({ matters: true });
    expect(podEventVerdict('delete', pod({}, { phase: 'Running' }))).toEqual({ matters: true });
  });
});

describe('objectDigest', () => {
  const base = {
    metadata: { generation: 2, labels: { [LABELS.clusterName]: 'c' }, annotations: { a: '1' } },
    spec: { variables: { n: 1 } },
    status: { ready: true },
  };
  it('ignores the labels a step does not read', () => {
    expect(
      objectDigest({
        ...base,
        metadata: { ...base.metadata, labels: { ...base.metadata.labels, team: 'x' } },
      }),
    ).toBe(objectDigest(base));
  });
  it.each([
    ['the generation', { ...base, metadata: { ...base.metadata, generation: 3 } }],
    ['the cluster label', { ...base, metadata: { ...base.metadata, labels: {} } }],
    ['an annotation', { ...base, metadata: { ...base.metadata, annotations: { a: '2' } } }],
    ['the deletion', { ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-12-03T00:00:00Z' } }],
    ['the spec', { ...base, spec: { variables: { n: 2 } } }],
    ['the status', { ...base, status: { ready: false } }],
  ])('changes with %s', (_name, changed) => {
    expect(objectDigest(changed)).not.toBe(objectDigest(base));
  });
});

describe('objectEventVerdict', () => {
  const newest: SeenObject = { uid: 'u1', resourceVersion: '100', digest: 'd1' };
  it.each([
    ['nothing handled yet', { uid: 'u1', resourceVersion: '101', digest: 'd1' }, undefined, 'changed'],
    ['another object of the name', { uid: 'u2', resourceVersion: '101', digest: 'd1' }, newest, 'changed'],
    ['the same version', { uid: 'u1', resourceVersion: '100', digest: 'd1' }, newest, 'duplicate'],
    ['an older version', { uid: 'u1', resourceVersion: '99', digest: 'd0' }, newest, 'stale'],
    [
      'an older version with fewer digits',
      { uid: 'u1', resourceVersion: '9', digest: 'd1' },
      newest,
      'stale',
    ],
    [
      'a newer version, same content',
      { uid: 'u1', resourceVersion: '120', digest: 'd1' },
      newest,
      'unchanged',
    ],
    ['a newer version, new content', { uid: 'u1', resourceVersion: '120', digest: 'd2' }, newest, 'changed'],
    ['a version that is no number', { uid: 'u1', resourceVersion: 'abc', digest: 'd1' }, newest, 'changed'],
  ] as const)('%s', (_name, event, seen, kind) => {
    expect(objectEventVerdict(event, seen)).toEqual({ kind });
  });
  it('compares versions as integers, never as text', () => {
    expect(compareResourceVersions('9', '10')).toBe(-1);
    expect(compareResourceVersions('10', '10')).toBe(0);
    expect(compareResourceVersions('x', 'x')).toBe(0);
    expect(compareResourceVersions('x', '10')).toBeUndefined();
  });
});
