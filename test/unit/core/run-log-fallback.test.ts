import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/core/redaction.ts';
import { POD_LOG_LIMIT_BYTES, podLogFallback, podLogSecret } from '../../../src/core/run-log-fallback.ts';
import type { JobView, PodView } from '../../../src/core/views.ts';

const job: JobView = {
  metadata: {
    name: 'captf-m-web-apply-a1-abcdef',
    namespace: 'team-a',
    uid: 'job-uid',
    labels: { 'captf.io/op': 'apply' },
    ownerReferences: [
      {
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'TerraformMachine',
        name: 'web',
        uid: 'obj',
        controller: true,
      },
    ],
  },
};
const ownedBy = { ownerReferences: [{ kind: 'Job', name: job.metadata.name, uid: 'job-uid' }] };
const killedPod: PodView = {
  metadata: { name: 'p1', ...ownedBy },
  status: {
    phase: 'Failed',
    containerStatuses: [
      { name: 'source', state: { terminated: { exitCode: 137, startedAt: '2026-01-01T00:00:00Z' } } },
    ],
  },
};
const neverRan: PodView = {
  metadata: { name: 'p1', ...ownedBy },
  status: {
    phase: 'Failed',
    containerStatuses: [
      { name: 'source', state: { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown' } } },
    ],
  },
};
const finishedAt = new Date('2026-01-01T00:05:00Z');
const failed = { success: false, result: 'failed', pod: 'p1', finishedAt };

describe('podLogFallback: a killed runner left no log (DESIGN.md section 7)', () => {
  const rows: {
    id: string;
    name: string;
    pods: PodView[];
    classification: Parameters<typeof podLogFallback>[0]['classification'];
    kept: boolean;
  }[] = [
    {
      id: 'F1',
      name: 'a failed run without a result whose source container ran: keep its pod log',
      pods: [killedPod],
      classification: failed,
      kept: true,
    },
    {
      id: 'F2',
      name: 'a run with a result: its runner wrote its own log',
      pods: [killedPod],
      classification: { ...failed, runnerResult: {} },
      kept: false,
    },
    {
      id: 'F3',
      name: 'a success: never',
      pods: [killedPod],
      classification: { ...failed, success: true, result: 'succeeded' },
      kept: false,
    },
    {
      id: 'F4',
      name: 'an interrupted run (no result): not failed, nothing read',
      pods: [killedPod],
      classification: { ...failed, result: 'interrupted' },
      kept: false,
    },
    {
      id: 'F5',
      name: 'a source container that never started has no log',
      pods: [neverRan],
      classification: failed,
      kept: false,
    },
    { id: 'F6', name: 'the pod is gone', pods: [], classification: failed, kept: false },
  ];
  it.each(rows)('$id $name', ({ pods, classification, kept }) => {
    const fallback = podLogFallback({ job, pods, classification });
    expect(fallback !== undefined).toBe(kept);
    if (fallback)
      expect(fallback).toMatchObject({
        pod: 'p1',
        container: 'source',
        finishedAt: finishedAt.toISOString(),
      });
  });

  it.each([
    {
      id: 'F8',
      name: 'a source container still running when read',
      source: { name: 'source', state: { running: { startedAt: '2026-01-01T00:00:07Z' } } },
      startedAt: '2026-01-01T00:00:07.000Z',
    },
    {
      id: 'F9',
      name: 'a restarted one: its first start',
      source: {
        name: 'source',
        state: { terminated: { exitCode: 137, startedAt: '2026-01-01T00:01:00Z' } },
        lastState: { terminated: { exitCode: 1, startedAt: '2026-01-01T00:00:03Z' } },
      },
      startedAt: '2026-01-01T00:00:03.000Z',
    },
    {
      id: 'F10',
      name: 'a null start of the last state does not hide the current one',
      source: {
        name: 'source',
        state: { terminated: { exitCode: 137, startedAt: '2026-01-01T00:00:04Z' } },
        lastState: { terminated: { exitCode: 0, startedAt: null } },
      },
      startedAt: '2026-01-01T00:00:04.000Z',
    },
  ])("$id the run's start from $name", ({ source, startedAt }) => {
    const pod: PodView = { ...killedPod, status: { phase: 'Failed', containerStatuses: [source] } };
    expect(podLogFallback({ job, pods: [pod], classification: failed })?.startedAt).toBe(startedAt);
  });

  it('F7 the Secret: redacted, marked as from the pod log with its finish, owned by the object; a cut read ends on a whole line', () => {
    const fallback = podLogFallback({ job, pods: [killedPod], classification: failed });
    if (!fallback) throw new Error('no fallback');
    const redactor = createRedactor(['tok-123-canary']);
    const secret = podLogSecret(fallback, 'step init\nvalue tok-123-canary\n', redactor);
    const text = Buffer.from(secret?.data.log ?? '', 'base64').toString('utf8');
    expect(text).toContain('step init');
    expect(text).not.toContain('tok-123-canary');
    expect(secret?.metadata).toMatchObject({
      name: `captf-log-${job.metadata.name}`,
      namespace: 'team-a',
      labels: { 'captf.io/job': job.metadata.name, 'captf.io/run-log': 'true' },
      annotations: {
        'captf.io/log-source': 'pod-log',
        'captf.io/finished-at': finishedAt.toISOString(),
        // The run's start is the source container's, not the Secret's creation (made after the run).
        'captf.io/started-at': '2026-01-01T00:00:00.000Z',
        'captf.io/log-complete': 'false',
      },
      ownerReferences: [{ kind: 'TerraformMachine', uid: 'obj', blockOwnerDeletion: false }],
    });
    // A read cut at limitBytes in the middle of a secret value: the partial line goes, not a prefix of it.
    const long = `${'x'.repeat(POD_LOG_LIMIT_BYTES - 5)}\ntok-123-can`;
    const cut = podLogSecret(fallback, long, redactor);
    expect(
      Buffer.from(cut?.data.log ?? '', 'base64')
        .toString('utf8')
        .includes('tok-123'),
    ).toBe(false);
  });
});
