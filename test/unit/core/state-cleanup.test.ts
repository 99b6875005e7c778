import { describe, expect, it } from 'vitest';
import {
  decideStateCleanup,
  managedInstanceCount,
  type StateReading,
  stateObjectsOf,
} from '../../../src/core/state-cleanup.ts';

const objects = {
  namespace: 'team-a',
  stateSecret: 'tfstate-default-m-a',
  lockLease: 'lock-tfstate-default-m-a',
};

describe('stateObjectsOf (issue 23 item 3: which state objects go with the finalizer)', () => {
  it('S1 the default kubernetes backend: the state Secret and its lock Lease in the namespace', () => {
    expect(stateObjectsOf({}, 'team-a', 'm-a')).toEqual(objects);
  });
  it('S2 a backend the spec names is the user’s: nothing to clean up', () => {
    expect(stateObjectsOf({ backend: { type: 'kubernetes', config: {} } }, 'team-a', 'm-a')).toBeUndefined();
    expect(
      stateObjectsOf({ backend: { type: 's3', config: { bucket: 'b' } } }, 'team-a', 'm-a'),
    ).toBeUndefined();
  });
  it('S3 no readable spec: nothing decided', () => {
    expect(stateObjectsOf(undefined, 'team-a', 'm-a')).toBeUndefined();
  });
});

describe('managedInstanceCount', () => {
  const rows = [
    {
      id: 'C1',
      name: 'a state after a full destroy holds nothing',
      state: { version: 4, resources: [] },
      expected: 0,
    },
    { id: 'C2', name: 'a state with no resources key holds nothing', state: { version: 4 }, expected: 0 },
    {
      id: 'C3',
      name: 'managed instances are counted, data sources are not',
      state: {
        resources: [
          { mode: 'managed', type: 'null_resource', instances: [{}, {}] },
          { mode: 'data', type: 'external', instances: [{}] },
          { mode: 'managed', type: 'terraform_data', instances: [{}] },
        ],
      },
      expected: 3,
    },
    {
      id: 'C4',
      name: 'a managed resource with no instance left holds nothing',
      state: { resources: [{ mode: 'managed', instances: [] }] },
      expected: 0,
    },
    { id: 'C5', name: 'not a state: unreadable', state: 'hello', expected: undefined },
    {
      id: 'C6',
      name: 'resources that are no list: unreadable',
      state: { resources: {} },
      expected: undefined,
    },
  ];
  it.each(rows)('$id $name', ({ state, expected }) => {
    expect(managedInstanceCount(state)).toBe(expected);
  });
});

describe('decideStateCleanup', () => {
  const rows: { id: string; name: string; reading: StateReading; kind: 'delete' | 'keep'; note?: RegExp }[] =
    [
      {
        id: 'D1',
        name: 'no state Secret: the Lease goes (a delete of the gone Secret is done)',
        reading: { kind: 'absent' },
        kind: 'delete',
      },
      {
        id: 'D2',
        name: 'an empty state: both go',
        reading: { kind: 'counted', managedInstances: 0 },
        kind: 'delete',
      },
      {
        id: 'D3',
        name: 'a state that still holds resources is kept, and a Warning says so',
        reading: { kind: 'counted', managedInstances: 2 },
        kind: 'keep',
        note: /tfstate-default-m-a holds 2 resource instance\(s\).*lock-tfstate-default-m-a are kept/,
      },
      {
        id: 'D4',
        name: 'a state that cannot be read is kept: never delete what might hold infrastructure',
        reading: { kind: 'unreadable', problem: 'incorrect header check' },
        kind: 'keep',
        note: /could not be read \(incorrect header check\)/,
      },
    ];
  it.each(rows)('$id $name', ({ reading, kind, note }) => {
    const decision = decideStateCleanup(objects, reading);
    expect(decision.kind).toBe(kind);
    if (decision.kind === 'keep') {
      expect(decision.event).toMatchObject({
        type: 'Warning',
        reason: 'StateKept',
        transitionKey: objects.stateSecret,
      });
      expect(decision.event.note).toMatch(note ?? /./);
    }
  });
});
