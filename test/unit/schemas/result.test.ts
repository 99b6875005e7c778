import { describe, expect, it } from 'vitest';
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
