import { describe, expect, it } from 'vitest';
import { jsonEqual, mergePatchOf } from '../../../src/core/merge-patch.ts';

const rows = [
  {
    id: 'M1',
    name: 'equal documents need no patch',
    before: { a: 1, b: { c: [1, 2] } },
    after: { b: { c: [1, 2] }, a: 1 },
    patch: undefined,
  },
  {
    id: 'M2',
    name: 'a removed field becomes null',
    before: { a: 1, b: 2 },
    after: { a: 1 },
    patch: { b: null },
  },
  {
    id: 'M3',
    name: 'nested objects are diffed, stale nested keys removed',
    before: { run: { job: 'j1', error: { kind: 'step' } } },
    after: { run: { job: 'j2' } },
    patch: { run: { job: 'j2', error: null } },
  },
  {
    id: 'M4',
    name: 'arrays are replaced whole',
    before: { c: [{ t: 'Ready' }] },
    after: { c: [{ t: 'Ready' }, { t: 'X' }] },
    patch: { c: [{ t: 'Ready' }, { t: 'X' }] },
  },
  {
    id: 'M5',
    name: 'a new object is sent whole',
    before: {},
    after: { activeJob: { name: 'j' } },
    patch: { activeJob: { name: 'j' } },
  },
];

describe('mergePatchOf', () => {
  it.each(rows)('$id $name', ({ before, after, patch }) => {
    expect(mergePatchOf(before, after)).toEqual(patch);
  });

  it('M6 jsonEqual ignores undefined keys and key order', () => {
    expect(jsonEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
  });
});
