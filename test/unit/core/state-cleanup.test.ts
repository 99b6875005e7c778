import { describe, expect, it } from 'vitest';
import { decideStateCleanup, stateObjectsOf } from '../../../src/core/state-cleanup.ts';
import type { StateContent } from '../../../src/core/state-evidence.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import { snapshot } from './builders.ts';

const objects = {
  namespace: 'default',
  stateSecret: 'tfstate-default-m-web',
  lockLease: 'lock-tfstate-default-m-web',
};

const withSpec = (fields: Record<string, unknown>) =>
  snapshot({
    spec: TARGET_SCHEMAS.TerraformMachine.spec.parse({
      source: { image: 'registry.example.com/m:1' },
      ...fields,
    }),
  });

describe('stateObjectsOf (issue 23 item 3: which state objects go with the finalizer)', () => {
  it('S1 the default kubernetes backend: the state Secret and its lock Lease in the namespace', () => {
    expect(stateObjectsOf(withSpec({}))).toEqual(objects);
  });
  it('S2 a backend the spec configures is the user’s: nothing to clean up', () => {
    expect(
      stateObjectsOf(withSpec({ backend: { type: 'kubernetes', config: { namespace: 'x' } } })),
    ).toBeUndefined();
    expect(stateObjectsOf(withSpec({ backend: { type: 's3', config: { bucket: 'b' } } }))).toBeUndefined();
  });
  it('S3 no readable spec: nothing decided', () => {
    expect(stateObjectsOf(snapshot({ spec: undefined }))).toBeUndefined();
  });
});

describe('decideStateCleanup', () => {
  const rows: { id: string; name: string; content: StateContent; kind: 'delete' | 'keep'; note?: RegExp }[] =
    [
      {
        id: 'D1',
        name: 'no state Secret: the Lease goes (a delete of the gone Secret is done)',
        content: 'missing',
        kind: 'delete',
      },
      { id: 'D2', name: 'a Secret OpenTofu never wrote: both go', content: 'unwritten', kind: 'delete' },
      {
        id: 'D3',
        name: 'a state without managed resources (a full destroy): both go',
        content: 'no-resources',
        kind: 'delete',
      },
      {
        id: 'D4',
        name: 'a state that still holds resources is kept, and a Warning says so',
        content: 'resources',
        kind: 'keep',
        note: /tfstate-default-m-web holds managed resource instances.*lock-tfstate-default-m-web are kept/,
      },
      {
        id: 'D5',
        name: 'a state that cannot be read is kept: never delete what might hold infrastructure',
        content: 'unreadable',
        kind: 'keep',
        note: /could not be read/,
      },
    ];
  it.each(rows)('$id $name', ({ content, kind, note }) => {
    const decision = decideStateCleanup(objects, content);
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
