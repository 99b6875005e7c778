import { describe, expect, it } from 'vitest';
import {
  MAX_STATE_SUFFIX_LENGTH,
  nameStateSuffix,
  stateSuffixOf,
  unrecordedStateSuffix,
} from '../../../src/core/state-identity.ts';

// Issue 11 item 5: the state is named by what clusterctl move and a restore keep (kind and name), never by
// the UID; objects whose state was written under their UID before the rule keep it.
describe('stateSuffixOf', () => {
  const object = { kind: 'TerraformMachine' as const, name: 'm-a', uid: 'uid-1' };

  it('a new object: <kind code>-<name>, the same for an object re-created with a new UID', () => {
    expect(stateSuffixOf({ ...object, status: {} })).toBe('m-m-a');
    expect(stateSuffixOf({ ...object, uid: 'uid-2', status: {} })).toBe('m-m-a');
    expect(stateSuffixOf({ kind: 'TerraformCluster', name: 'm-a', uid: 'u', status: {} })).toBe('c-m-a');
    expect(stateSuffixOf({ kind: 'TerraformMachinePool', name: 'm-a', uid: 'u', status: {} })).toBe('mp-m-a');
  });

  it("a status that lost its start's write: the newest Job's annotation, before the legacy rule", () => {
    const status = { lastRun: { job: 'j' } } as never;
    expect(stateSuffixOf({ ...object, status, jobSuffixes: ['m-m-a', 'old'] })).toBe('m-m-a');
    expect(unrecordedStateSuffix({}, ['m-m-a'])).toBe('m-m-a');
    expect(unrecordedStateSuffix({ stateSuffix: 'x' }, ['m-m-a'])).toBeUndefined();
    expect(unrecordedStateSuffix({}, [])).toBeUndefined();
  });

  it('the recorded suffix wins, whatever the UID or name rule says', () => {
    expect(stateSuffixOf({ ...object, uid: 'uid-9', status: { stateSuffix: 'uid-1' } })).toBe('uid-1');
  });

  it.each([
    ['lastRun', { lastRun: { job: 'j' } }],
    ['lastSuccess', { lastSuccess: { apply: '2026-01-01T00:00:00Z' } }],
    ['appliedGeneration', { appliedGeneration: 1 }],
    ['activeJob', { activeJob: { name: 'j' } }],
  ])('an object with runs (%s) but no recorded suffix ran before the rule: its UID', (_field, status) => {
    expect(stateSuffixOf({ ...object, status: status as never })).toBe('uid-1');
  });

  it('a name too long for the backend label becomes a hash of it, still per kind and stable', () => {
    const long = 'x'.repeat(63);
    const suffix = nameStateSuffix('TerraformMachinePool', long);
    expect(suffix).toMatch(/^mp--[0-9a-f]{16}$/);
    expect(nameStateSuffix('TerraformMachinePool', long)).toBe(suffix);
    expect(nameStateSuffix('TerraformMachine', 'y'.repeat(61)).length).toBe(MAX_STATE_SUFFIX_LENGTH);
  });
});
