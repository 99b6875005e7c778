import { describe, expect, it } from 'vitest';
import { createRedactor, MIN_SECRET_LENGTH, REDACTED, secretTexts } from '../../../src/core/redaction.ts';

describe('redaction (C15)', () => {
  it('hides every occurrence of a secret', () => {
    const r = createRedactor(['tok-123-canary']);
    expect(r.redact('token tok-123-canary is not ok; tok-123-canary!')).toBe(
      `token ${REDACTED} is not ok; ${REDACTED}!`,
    );
  });

  it('hides the escaped form Terraform prints in quoted values', () => {
    const secret = 'pa"ss\\word\n2';
    const r = createRedactor([secret]);
    expect(r.redact(`var.p is ${JSON.stringify(secret)}`)).toBe(`var.p is "${REDACTED}"`);
  });

  it('hides a longer secret whole when it contains a shorter one', () => {
    const r = createRedactor(['abcd', 'xxabcdxx']);
    expect(r.redact('xxabcdxx')).toBe(REDACTED);
  });

  it('ignores empty secrets instead of redacting between every character', () => {
    expect(createRedactor(['']).redact('plain')).toBe('plain');
  });

  it.each([
    { id: 'string', value: 'tok', texts: ['tok'] },
    { id: 'nested', value: { a: ['x1', { b: 'y2' }], n: null }, texts: ['x1', 'y2'] },
    { id: 'long number', value: 123456, texts: ['123456'] },
    { id: 'short number', value: 12, texts: [] },
    { id: 'boolean', value: true, texts: [] },
  ])('secret texts of a $id value', ({ value, texts }) => {
    expect(secretTexts(value)).toEqual(texts);
  });

  it(`ignores secrets shorter than ${MIN_SECRET_LENGTH} characters: short common words stay readable`, () => {
    expect(createRedactor(['small', 'demo1']).redact('a small demo1 machine')).toBe('a small demo1 machine');
    expect(createRedactor(['us-east-1']).redact('zone us-east-1a')).toBe(`zone ${REDACTED}a`);
  });
});
