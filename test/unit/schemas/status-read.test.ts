import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describePlan } from '../../../src/core/describe-plan.ts';
import { planStep } from '../../../src/core/planner.ts';
import type { TargetKind } from '../../../src/schemas/kinds/api-group.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import { RENAMED_STATUS_VALUES, readStatus } from '../../../src/schemas/kinds/status-read.ts';
import { planFacts, snapshot } from '../core/builders.ts';

// Issue 23 item 4: every status shape a release ever wrote is read as this release means it, and one it
// cannot read stops the object (StatusUnreadable), never reads as empty.

const FIXTURES = join(import.meta.dirname, '../../fixtures/status');

interface StatusFixture {
  about: string;
  kind: TargetKind;
  expect: { readable: boolean; paths?: string[]; renamed?: Record<string, string> };
  status: Record<string, unknown>;
}

interface EnumFixture {
  enums: {
    path: string;
    values: { value: string; since: string; removedIn: string | null; renamedTo?: string }[];
  }[];
}

function load<T>(name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as T;
}

function valueAt(value: unknown, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((inner, key) => (inner as Record<string, unknown> | undefined)?.[key], value);
}

function withValueAt(value: unknown, path: readonly string[], leaf: unknown): unknown {
  const [key, ...rest] = path;
  if (key === undefined) return leaf;
  const record = (value ?? {}) as Record<string, unknown>;
  return { ...record, [key]: withValueAt(record[key], rest, leaf) };
}

const shapes = readdirSync(FIXTURES)
  .filter((name) => name !== 'released-enum-values.json')
  .map((file) => ({ file, ...load<StatusFixture>(file) }));

describe('status shapes of every release (test/fixtures/status)', () => {
  it.each(shapes.filter((s) => s.expect.readable))('S1 $file is read, renamed values as today', (shape) => {
    const read = readStatus(TARGET_SCHEMAS[shape.kind].status, shape.status);
    expect(read.kind).toBe('readable');
    for (const [path, value] of Object.entries(shape.expect.renamed ?? {}))
      expect(valueAt(read.status, path)).toBe(value);
    expect(read.status.stateSuffix).toBe(shape.status.stateSuffix);
    expect(read.status.lastSuccess).toEqual(shape.status.lastSuccess);
  });

  it.each(shapes.filter((s) => !s.expect.readable))(
    'S2 $file is unreadable: the paths named, the readable fields kept, no value quoted',
    (shape) => {
      const read = readStatus(TARGET_SCHEMAS[shape.kind].status, shape.status);
      expect(read.kind).toBe('unreadable');
      if (read.kind !== 'unreadable') return;
      expect(read.paths).toEqual(shape.expect.paths);
      expect(read.status.stateSuffix).toBe(shape.status.stateSuffix);
      expect(read.status.lastSuccess).toEqual(shape.status.lastSuccess);
      expect(read.status.lastRun).toBeUndefined();
    },
  );

  it.each(shapes.filter((s) => !s.expect.readable))(
    'S3 $file: the step waits StatusUnreadable, starts nothing and keeps every field',
    (shape) => {
      const read = readStatus(TARGET_SCHEMAS[shape.kind].status, shape.status);
      if (read.kind !== 'unreadable') throw new Error('fixture is readable');
      const snap = snapshot({
        ref: { kind: shape.kind, namespace: 'default', name: 'web' },
        status: read.status,
        statusUnreadable: read.paths,
      });
      const planned = planStep(planFacts(snap));
      if (planned.kind !== 'plan') throw new Error(`planner asked for ${planned.read}`);
      expect(planned.outcome.reason).toBe('StatusUnreadable');
      expect(planned.move).toEqual({ kind: 'none' });
      expect(planned.bookkept).toEqual([]);
      expect(planned.prune).toEqual([]);
      expect(planned.events.map((e) => e.reason)).toEqual(['StatusUnreadable']);
      for (const path of read.paths) expect(planned.outcome.message).toContain(path);
      // What a merge patch from the readable fields would remove: nothing.
      for (const key of Object.keys(read.status))
        expect(planned.status?.[key as 'stateSuffix']).toEqual(read.status[key as 'stateSuffix']);
      expect(planned.status?.waitReason).toBe('StatusUnreadable');
      expect(describePlan(planned, snap).message).toContain(read.paths[0] ?? '');
    },
  );

  it('S7 a deleting object with an unreadable status keeps its finalizer and starts no destroy', () => {
    const snap = snapshot({
      meta: { ...snapshot().meta, deletionTimestamp: '2026-11-29T12:00:00Z' },
      status: { stateSuffix: 'm-web' },
      statusUnreadable: ['lastRun.startedAt'],
    });
    const planned = planStep(planFacts(snap));
    expect(planned).toMatchObject({
      kind: 'plan',
      move: { kind: 'none' },
      outcome: { reason: 'StatusUnreadable' },
    });
  });

  it('S8 a machine whose TerraformCluster has unreadable fields starts nothing, a destroy neither', () => {
    const owningCluster = { name: 'dev', ready: false, unreadable: ['status.lastRun.error.kind'] };
    for (const deleting of [false, true]) {
      const snap = snapshot({
        owningCluster,
        clusterName: 'dev',
        meta: { ...snapshot().meta, ...(deleting ? { deletionTimestamp: '2026-11-29T12:00:00Z' } : {}) },
        status: deleting ? { lastSuccess: { apply: '2026-11-29T11:00:00Z' }, stateSuffix: 'm-web' } : {},
      });
      const planned = planStep(planFacts(snap, { state: 'resources' }));
      if (planned.kind !== 'plan') throw new Error(`planner asked for ${planned.read}`);
      expect(planned.outcome.reason).toBe('WaitingForDependencies');
      expect(planned.outcome.message).toContain('status.lastRun.error.kind');
    }
  });

  const enums = load<EnumFixture>('released-enum-values.json').enums;
  const base = load<StatusFixture>('1ccee75-cluster-current.json');
  const rows = enums.flatMap((e) =>
    e.values.map((v) => ({ path: e.path, ...v, expected: v.removedIn === null ? v.value : v.renamedTo })),
  );
  it.each(rows)('S4 $path = $value (since $since) is read as $expected', (row) => {
    // The base shape with every enum field present (a failed run with an error and a running Job).
    const full = {
      ...base.status,
      activeJob: { name: 'j', op: 'apply', attempt: 1, startedAt: '2026-11-29T12:00:00Z' },
      lastRun: {
        ...(base.status.lastRun as Record<string, unknown>),
        result: 'failed',
        error: { kind: 'step', step: 'apply', summary: 's' },
      },
      waitReason: 'Backoff',
    };
    const read = readStatus(
      TARGET_SCHEMAS.TerraformCluster.status,
      withValueAt(full, row.path.split('.'), row.value),
    );
    expect(read.kind).toBe('readable');
    expect(valueAt(read.status, row.path)).toBe(row.expected);
  });

  it('S5 every rename the reader knows is a removed value of the fixture, so each has a row', () => {
    const removed = enums.flatMap((e) =>
      e.values.filter((v) => v.removedIn !== null).map((v) => [e.path, v.value, v.renamedTo]),
    );
    const known = Object.entries(RENAMED_STATUS_VALUES).flatMap(([path, renames]) =>
      Object.entries(renames).map(([from, to]) => [path, from, to]),
    );
    expect(known).toEqual(removed);
  });

  it('S6 a status that is not an object is unreadable as a whole', () => {
    const read = readStatus(TARGET_SCHEMAS.TerraformMachine.status, 'garbage');
    expect(read).toEqual({ kind: 'unreadable', status: {}, paths: ['(status)'] });
  });
});
