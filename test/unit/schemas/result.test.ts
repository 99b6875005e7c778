import { describe, expect, it } from 'vitest';
import { CONTRACT_OUTPUT_NAMES } from '../../../src/schemas/contract-output-names.ts';
import { CONTRACT_OUTPUTS_OF_KIND } from '../../../src/schemas/contract-outputs.ts';
import { TARGET_KINDS } from '../../../src/schemas/kinds/api-group.ts';
import { parseRunnerResult, RESULT_MAX_BYTES } from '../../../src/schemas/result.ts';

const valid = {
  version: 1,
  op: 'apply',
  result: 'succeeded',
  steps: [{ name: 'init', exit: 0, seconds: 1.2 }],
};

describe('parseRunnerResult', () => {
  const rows = [
    { id: 'P1', name: 'an empty message is missing', text: '', reason: 'missing' },
    { id: 'P2', name: 'no message at all is missing', text: undefined, reason: 'missing' },
    { id: 'P3', name: 'text that is not JSON is not-json', text: 'panic: runtime error', reason: 'not-json' },
    {
      id: 'P4',
      name: 'JSON cut at the cap is truncated',
      text: JSON.stringify({ ...valid, pad: 'x'.repeat(RESULT_MAX_BYTES) }).slice(0, RESULT_MAX_BYTES),
      reason: 'truncated',
    },
    {
      id: 'P5',
      name: 'JSON of another shape is invalid',
      text: JSON.stringify({ version: 2 }),
      reason: 'invalid',
    },
  ];
  it.each(rows)('$id $name', ({ text, reason }) => {
    const parsed = parseRunnerResult(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toBe(reason);
  });

  it('P6 a valid version-1 document parses', () => {
    const parsed = parseRunnerResult(JSON.stringify(valid));
    expect(parsed).toEqual({ ok: true, result: valid });
  });

  // A cluster's exports and failure domains were once stripped here (the parse knew five of the seven
  // names), so they never reached its status nor its machines' modules.
  it('P7 every contract output the runner reports survives the parse, as reported', () => {
    const outputs = {
      controlPlaneEndpoint: { host: '10.20.0.10', port: 6443 },
      failureDomains: [{ name: 'zone-a', controlPlane: true }],
      exports: { cidr: '10.20.0.0/16', network_id: 'n-1' },
      providerID: 'captf-local://m-a/1',
      addresses: [{ type: 'InternalIP', address: '10.20.0.101' }],
      providerIDList: ['captf-local://mp/1'],
      replicas: 1,
    };
    expect(Object.keys(outputs).sort()).toEqual([...CONTRACT_OUTPUT_NAMES].sort());
    const parsed = parseRunnerResult(JSON.stringify({ ...valid, outputs }));
    expect(parsed).toEqual({ ok: true, result: { ...valid, outputs } });
  });

  it("P8 each kind records only contract outputs, and every contract output is some kind's", () => {
    const recorded = TARGET_KINDS.flatMap((kind) => CONTRACT_OUTPUTS_OF_KIND[kind]);
    expect([...recorded].sort()).toEqual([...CONTRACT_OUTPUT_NAMES].sort());
  });

  it('C15: the message of unreadable text never quotes the text', () => {
    for (const text of ['tok-123-canary', 'Error: var.token = "tok-123-canary"', `{"x": "tok-123-canary"`]) {
      const parsed = parseRunnerResult(text);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) {
        expect(parsed.message).not.toContain('tok-123');
        expect(parsed.message).not.toContain('Error: var');
      }
    }
  });
});
