import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.ts';
import { inputsHash } from '../../../src/core/inputs-hash.ts';

describe('canonicalJson: one text for the inputs hash and the plan digest', () => {
  it('sorts keys at every level, leaves undefined members out and writes undefined elements as null', () => {
    expect(canonicalJson({ b: [1, undefined, { d: null, c: 'x' }], a: undefined, é: 1, Z: 2 })).toBe(
      '{"Z":2,"b":[1,null,{"c":"x","d":null}],"é":1}',
    );
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('keeps every inputs hash stored before the move (a change would re-apply every object)', () => {
    const inputs = {
      image: 'registry.example.com/m@sha256:abc',
      variables: { size: 'small', disks: [20, 50], nested: { b: 1, a: [true, null] } },
      env: [{ name: 'HTTPS_PROXY', value: 'p' }],
      referencedDataDigest: 'd1',
    };
    // Computed with the implementation src/core/inputs-hash.ts had before canonical-json.ts existed.
    expect(inputsHash(inputs)).toBe('893613f0478a134f2ddc2259f53db4d161271098c1beddcd191dca558631c6cd');
  });
});
