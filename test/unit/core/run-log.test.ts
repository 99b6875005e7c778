import { describe, expect, it } from 'vitest';
import { planStep } from '../../../src/core/planner.ts';
import {
  buildRunLogSecret,
  RUN_LOG_MAX_BYTES,
  runLogSecretName,
  runLogTarget,
  tailUtf8,
} from '../../../src/core/run-log.ts';
import type { JobView } from '../../../src/core/views.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import { iso, planFacts, record, snapshot } from './builders.ts';

// The run log Secret (src/core/run-log.ts): the tail of a run's redacted output, cut on a character
// boundary; its name, labels and owner from its Job; pruned with its Job.

const JOB = {
  name: 'captf-m-web-apply-a1-abc123',
  namespace: 'team-a',
  labels: {
    'captf.io/managed': 'true',
    'captf.io/owner-kind': 'TerraformMachine',
    'captf.io/owner-name': 'web',
    'captf.io/owner-uid': 'uid-web',
    'captf.io/op': 'apply',
    'captf.io/attempt': '1',
  },
  ownerReferences: [
    {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'TerraformMachine',
      name: 'web',
      uid: 'uid-web',
      controller: true,
      blockOwnerDeletion: true,
    },
  ],
};

describe('tailUtf8', () => {
  it.each([
    { id: 'T1', name: 'a text within the bound is kept whole', text: 'abc', max: 3, tail: 'abc', dropped: 0 },
    {
      id: 'T2',
      name: 'ASCII keeps exactly the last bytes',
      text: 'abcdef',
      max: 4,
      tail: 'cdef',
      dropped: 2,
    },
    // 'é' is 2 bytes: a cut inside it moves forward past it.
    {
      id: 'T3',
      name: 'a cut inside a 2-byte character drops it',
      text: 'aébc',
      max: 3,
      tail: 'bc',
      dropped: 3,
    },
    { id: 'T4', name: 'a cut at a character start keeps it', text: 'aébc', max: 4, tail: 'ébc', dropped: 1 },
    // '😀' is 4 bytes.
    {
      id: 'T5',
      name: 'a cut inside a 4-byte character drops all of it',
      text: 'x😀yz',
      max: 4,
      tail: 'yz',
      dropped: 5,
    },
    { id: 'T6', name: 'a bound of 0 keeps nothing', text: 'ab', max: 0, tail: '', dropped: 2 },
  ])('$id $name', ({ text, max, tail, dropped }) => {
    const cut = tailUtf8(text, max);
    expect(cut).toEqual({ text: tail, droppedBytes: dropped });
    expect(Buffer.byteLength(cut.text) + cut.droppedBytes).toBe(Buffer.byteLength(text));
    expect(Buffer.byteLength(cut.text)).toBeLessThanOrEqual(max);
  });

  it('T7 never yields a replacement character, wherever the cut falls', () => {
    const text = 'é😀ü→'.repeat(50);
    for (let max = 0; max <= Buffer.byteLength(text); max += 1)
      expect(tailUtf8(text, max).text).not.toContain('\uFFFD');
  });
});

describe('the run log Secret', () => {
  it("L1 is named after its Job, carries the Job's labels plus captf.io/job and captf.io/run-log, and is owned by the object, not blocking", () => {
    const target = runLogTarget(JOB);
    expect(target).toEqual({
      namespace: 'team-a',
      name: 'captf-log-captf-m-web-apply-a1-abc123',
      labels: { ...JOB.labels, 'captf.io/job': JOB.name, 'captf.io/run-log': 'true' },
      ownerReferences: [{ ...JOB.ownerReferences[0], blockOwnerDeletion: false }],
    });
  });

  it('L2 a Job without an owner has no log target', () => {
    expect(runLogTarget({ ...JOB, ownerReferences: [] })).toBeUndefined();
  });

  it('L3 holds the whole log when it fits, complete, nothing truncated', () => {
    const target = runLogTarget(JOB);
    if (target === undefined) throw new Error('no target');
    const secret = buildRunLogSecret(
      target,
      { text: 'line 1\nline 2\n', droppedBytes: 0 },
      true,
      '2026-01-01T00:00:00.000Z',
    );
    expect(secret.type).toBe('captf.io/run-log');
    expect(Buffer.from(secret.data.log, 'base64').toString('utf8')).toBe('line 1\nline 2\n');
    expect(secret.metadata.annotations).toEqual({
      'captf.io/log-truncated-bytes': '0',
      'captf.io/log-complete': 'true',
      'captf.io/started-at': '2026-01-01T00:00:00.000Z',
    });
  });

  it('L4 keeps the last 64 KiB and counts what a buffer dropped before plus what the cut drops', () => {
    const target = runLogTarget(JOB);
    if (target === undefined) throw new Error('no target');
    const text = `${'x'.repeat(100)}${'y'.repeat(RUN_LOG_MAX_BYTES)}`;
    const secret = buildRunLogSecret(target, { text, droppedBytes: 7 }, false);
    const stored = Buffer.from(secret.data.log, 'base64').toString('utf8');
    expect(stored).toBe('y'.repeat(RUN_LOG_MAX_BYTES));
    expect(secret.metadata.annotations).toEqual({
      'captf.io/log-truncated-bytes': '107',
      'captf.io/log-complete': 'false',
    });
  });
});

describe('pruning', () => {
  it("P1 every pruned Job's run log goes with it, and no other", () => {
    const records = [1, 2, 3].map((n) => record('apply', 'succeeded', n * 100));
    const jobs: JobView[] = records.map((r, n) => ({
      metadata: {
        name: r.name,
        uid: `uid-${n}`,
        resourceVersion: '1',
        creationTimestamp: iso(n * 100 - 60),
        labels: { 'captf.io/op': 'apply', 'captf.io/attempt': String(r.attempt) },
        annotations: { 'captf.io/bookkept': 'true', 'captf.io/outcome': 'succeeded' },
      },
      status: {
        conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: iso(n * 100) }],
        completionTime: iso(n * 100),
      },
    }));
    const spec = TARGET_SCHEMAS.TerraformMachine.spec.parse({
      source: { image: 'registry.example.com/m:1' },
      jobs: { successfulJobsHistoryLimit: 1 },
    });
    // A step that rests (its state is missing) prunes what the history no longer keeps.
    const snap = snapshot({
      jobs,
      records,
      spec,
      inputsHash: 'h2',
      status: { lastSuccess: { apply: iso(300) }, appliedInputsHash: 'h1', stateSuffix: 'm-web' },
    });
    const planned = planStep(planFacts(snap, { state: 'missing' }));
    if (planned.kind !== 'plan') throw new Error(`planner asked for ${planned.read}`);
    const kept = records.slice(-1).map((r) => r.name);
    const pruned = records.map((r) => r.name).filter((name) => !kept.includes(name));
    expect(pruned.length).toBeGreaterThan(0);
    expect(planned.prune.map((p) => [p.name, p.runLog])).toEqual(
      pruned.map((name) => [name, runLogSecretName(name)]),
    );
  });
});
