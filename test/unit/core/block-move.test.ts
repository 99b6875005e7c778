import { describe, expect, it } from 'vitest';
import {
  BLOCK_MOVE_ANNOTATION,
  blockMoveChange,
  blockMoveWanted,
  carriesBlockMove,
} from '../../../src/core/block-move.ts';
import { LABELS, runClusterOf } from '../../../src/core/job-labels.ts';
import { planStep } from '../../../src/core/planner.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import { movesWithCluster } from '../../../src/core/run-inputs.ts';
import { stateMoveLabelPatch } from '../../../src/core/run-secret-manifest.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import type { Move, PlanFacts, StepPlan } from '../../../src/core/step-plan.ts';
import type { JobView } from '../../../src/core/views.ts';
import { appliedAtRest, iso, planFacts, record, snapshot } from './builders.ts';

/**
 * Issue 23 item 6: Cluster API's move contract. An object carries `clusterctl.cluster.x-k8s.io/block-move`
 * while a Job of it runs and not once the Job is bookkept; a step whose object already says what the move
 * wants writes nothing.
 */

const BLOCKED = { [BLOCK_MOVE_ANNOTATION]: '' };

function plan(facts: PlanFacts): StepPlan {
  const planned = planStep(facts);
  if (planned.kind !== 'plan') throw new Error(`expected a plan, got a read of ${planned.read}`);
  return planned;
}

function withAnnotations(snap: Snapshot, annotations: Record<string, string> | undefined): Snapshot {
  return { ...snap, meta: { ...snap.meta, ...(annotations ? { annotations } : {}) } };
}

/** An applied machine at rest, with `annotations` when given. */
function atRest(annotations?: Record<string, string>): Snapshot {
  return withAnnotations(appliedAtRest(), annotations);
}

/** A machine whose apply Job runs (created 30 s ago, not finished). */
function running(annotations?: Record<string, string>): { snap: Snapshot; facts: Partial<PlanFacts> } {
  const name = 'captf-m-web-apply-a1-abcdef';
  const job: JobView = {
    metadata: {
      name,
      uid: 'job-uid',
      resourceVersion: '5',
      creationTimestamp: iso(-30),
      labels: { 'captf.io/op': 'apply', 'captf.io/attempt': '1' },
      annotations: { 'captf.io/inputs-hash': 'h1' },
    },
    spec: { activeDeadlineSeconds: 3600 },
    status: { startTime: iso(-30), active: 1 },
  };
  const active = record('apply', 'succeeded', 0, {
    name,
    attempt: 1,
    finished: false,
    bookkept: false,
    createdAtMs: Date.parse(iso(-30)),
  });
  const snap = withAnnotations(
    snapshot({
      status: {
        stateSuffix: 'm-web',
        activeJob: { name, op: 'apply', attempt: 1, startedAt: iso(-30) },
      } as Snapshot['status'],
      jobs: [job],
      records: [active],
    }),
    annotations,
  );
  return { snap, facts: { runSecretExists: true } };
}

describe('the block-move rule (pure)', () => {
  it('BM1 wanted while a Job is started or runs, not once nothing runs or our finalizer goes; no say for none and the first finalizer', () => {
    const moves: [Move, boolean | undefined][] = [
      [{ kind: 'start' } as Move, true],
      [{ kind: 'watch' } as Move, true],
      [{ kind: 'rest', healLease: true }, false],
      [{ kind: 'delete-job' } as Move, false],
      [{ kind: 'none' }, undefined],
      [{ kind: 'finalizers', finalizers: ['x'], gone: false }, undefined],
      [{ kind: 'finalizers', finalizers: [], gone: true }, false],
    ];
    for (const [move, wanted] of moves) expect(blockMoveWanted(move), JSON.stringify(move)).toBe(wanted);
  });

  it('BM2 a change only where the object differs from what is wanted', () => {
    expect(blockMoveChange(false, true)).toBe('add');
    expect(blockMoveChange(true, false)).toBe('remove');
    expect(blockMoveChange(true, true)).toBeUndefined();
    expect(blockMoveChange(false, false)).toBeUndefined();
    expect(blockMoveChange(true, undefined)).toBeUndefined();
    expect(blockMoveChange(false, undefined)).toBeUndefined();
  });

  it('BM3 any value counts, as clusterctl reads it', () => {
    expect(carriesBlockMove({ [BLOCK_MOVE_ANNOTATION]: 'true' })).toBe(true);
    expect(carriesBlockMove({ [BLOCK_MOVE_ANNOTATION]: '' })).toBe(true);
    expect(carriesBlockMove({ other: '' })).toBe(false);
    expect(carriesBlockMove(undefined)).toBe(false);
  });
});

describe('planStep and block-move', () => {
  it('BM4 a step that starts a Job adds it (once: an object already carrying it is not written)', () => {
    const first = plan(planFacts(snapshot()));
    expect(first.move.kind).toBe('start');
    expect(first.blockMove).toBe('add');
    const again = plan(planFacts(withAnnotations(snapshot(), BLOCKED)));
    expect(again.move.kind).toBe('start');
    expect(again.blockMove).toBeUndefined();
  });

  it('BM5 a step that watches a running Job adds it when missing, and writes nothing when it is there', () => {
    const missing = running();
    const watched = plan(planFacts(missing.snap, missing.facts));
    expect(watched.move.kind).toBe('watch');
    expect(watched.blockMove).toBe('add');
    const there = running(BLOCKED);
    const quiet = plan(planFacts(there.snap, there.facts));
    expect(quiet.move.kind).toBe('watch');
    expect(quiet.blockMove).toBeUndefined();
  });

  it('BM5b a Job started before Cluster API adopted the object is watched in the lease group it was started in', () => {
    const adoptedSince = running();
    const watched = plan(planFacts({ ...adoptedSince.snap, clusterName: 'c1' }, adoptedSince.facts));
    expect(watched.move).toMatchObject({ kind: 'watch' });
    expect(watched.move).not.toHaveProperty(['guard', 'clusterName']);
    const inCluster = running();
    const job = inCluster.snap.jobs[0];
    if (!job) throw new Error('no Job');
    const labelled = {
      ...job,
      metadata: { ...job.metadata, labels: { ...job.metadata.labels, [LABELS.clusterName]: 'c1' } },
    };
    const watchedInCluster = plan(
      planFacts({ ...inCluster.snap, clusterName: 'c1', jobs: [labelled] }, inCluster.facts),
    );
    expect(watchedInCluster.move).toMatchObject({ kind: 'watch', guard: { clusterName: 'c1' } });
    expect(runClusterOf({ metadata: { labels: { [LABELS.clusterName]: '' } } })).toBeUndefined();
    expect(runClusterOf({})).toBeUndefined();
  });

  it('BM6 at rest it goes; an object at rest without it costs nothing', () => {
    const carrying = plan(planFacts(atRest(BLOCKED)));
    expect(carrying.move.kind).toBe('rest');
    expect(carrying.blockMove).toBe('remove');
    const clean = plan(planFacts(atRest()));
    expect(clean.move.kind).toBe('rest');
    expect(clean.blockMove).toBeUndefined();
  });

  it('BM7 paused (a move under way): nothing starts, and the annotation of a bookkept run goes', () => {
    const paused = plan(planFacts({ ...atRest(BLOCKED), paused: true, inputsHash: 'h2' }));
    expect(paused.move.kind).toBe('rest');
    expect(paused.blockMove).toBe('remove');
  });

  it('BM8 the finalizer step and a status that does not parse leave it as it is', () => {
    const fresh = plan(planFacts(withAnnotations(snapshot({ meta: {} }), BLOCKED)));
    expect(fresh.move).toMatchObject({ kind: 'finalizers', finalizers: [FINALIZER], gone: false });
    expect(fresh.blockMove).toBeUndefined();
    const unreadable = plan(planFacts({ ...atRest(BLOCKED), statusUnreadable: ['status.lastRun'] }));
    expect(unreadable.move.kind).toBe('none');
    expect(unreadable.blockMove).toBeUndefined();
  });
});

describe('the clusterctl move label on a state Secret made before Cluster API owned the object', () => {
  it('BM9 added when the object moves with its Cluster and the Secret lacks it; never for a standalone object', () => {
    const move = 'clusterctl.cluster.x-k8s.io/move';
    expect(stateMoveLabelPatch({ tfstate: 'true' }, true)).toEqual({ [move]: '' });
    expect(stateMoveLabelPatch(undefined, true)).toEqual({ [move]: '' });
    expect(stateMoveLabelPatch({ tfstate: 'true', [move]: '' }, true)).toBeUndefined();
    expect(stateMoveLabelPatch({ tfstate: 'true' }, false)).toBeUndefined();
  });

  it('BM10 an object moves with its Cluster when Cluster API owns it', () => {
    expect(movesWithCluster({ ownedByClusterApi: true })).toBe(true);
    expect(movesWithCluster({})).toBe(false);
  });
});
