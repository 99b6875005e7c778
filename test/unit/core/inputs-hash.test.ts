import { describe, expect, it } from 'vitest';
import { canonicalJson, inputsHash, inputsOf } from '../../../src/core/inputs-hash.ts';
import type { TerraformMachineSpec } from '../../../src/schemas/kinds/terraform-machine.ts';

const spec: TerraformMachineSpec = {
  source: { image: 'registry.example.com/m:1' },
  variables: { size: 'small', tags: { a: 1, b: 2 } },
  applyPolicy: 'Automatic',
  driftCheck: { enabled: true, action: 'Report' },
};
const hash = (s: TerraformMachineSpec, digest?: string) => inputsHash(inputsOf(s, digest));

describe('inputsHash: DESIGN.md sections 3 and 4', () => {
  it('key order does not matter', () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(hash({ ...spec, variables: { tags: { b: 2, a: 1 }, size: 'small' } })).toBe(hash(spec));
  });

  it.each([
    ['the image', { ...spec, source: { image: 'registry.example.com/m:2' } }],
    ['a variable', { ...spec, variables: { size: 'large' } }],
    ['a variable source', { ...spec, variablesFrom: [{ name: 'k', secretKeyRef: { name: 's', key: 'k' } }] }],
    ['the backend', { ...spec, backend: { type: 'kubernetes', config: { namespace: 'x' } } }],
    ['the env', { ...spec, jobs: { env: [{ name: 'HTTPS_PROXY', value: 'p' }] } }],
  ])('changes with %s', (_, changed) => {
    expect(hash(changed)).not.toBe(hash(spec));
  });

  it.each([
    ['the apply policy', { ...spec, applyPolicy: 'Manual' as const }],
    ['the drift check', { ...spec, driftCheck: { enabled: false, action: 'Remediate' as const } }],
    [
      'the Job scheduling policy',
      { ...spec, jobs: { activeDeadlineSeconds: 100, nodeSelector: { a: 'b' } } },
    ],
    ['the providerID the controller writes back', { ...spec, providerID: 'aws:///i-1' }],
  ])('does not change with %s', (_, unchanged) => {
    expect(hash(unchanged)).toBe(hash(spec));
  });

  it('a rotated referenced Secret is an input change', () => {
    expect(hash(spec, 'd1')).not.toBe(hash(spec, 'd2'));
  });
});
