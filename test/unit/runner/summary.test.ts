import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/core/redaction.ts';
import type { Diagnostic } from '../../../src/runner/machine-ui.ts';
import { curateSummary, cutToBytes } from '../../../src/runner/summary.ts';
import { SUMMARY_MAX_BYTES } from '../../../src/schemas/result.ts';

const none = createRedactor([]);
const bytes = (text: string) => new TextEncoder().encode(text).length;

describe('curated summary (DESIGN.md section 10)', () => {
  it('joins error diagnostics with their place, one line each, warnings left out', () => {
    const diagnostics: Diagnostic[] = [
      { severity: 'warning', summary: 'Deprecated', detail: 'old' },
      {
        severity: 'error',
        summary: 'Invalid value for variable',
        detail: 'bad\n\nvalue',
        where: 'main.tf:5',
      },
      { severity: 'error', summary: 'execution halted', detail: '' },
    ];
    expect(curateSummary(diagnostics, 'fallback', none)).toBe(
      'Invalid value for variable (main.tf:5): bad value; execution halted',
    );
  });

  it('uses warnings when there is no error, and the fallback when there is nothing', () => {
    expect(curateSummary([{ severity: 'warning', summary: 'W', detail: '' }], 'f', none)).toBe('W');
    expect(curateSummary([], 'plan exited 1 without diagnostics', none)).toBe(
      'plan exited 1 without diagnostics',
    );
  });

  it('mentions a diagnostic repeated per instance once', () => {
    const d: Diagnostic = { severity: 'error', summary: 'execution halted', detail: '' };
    expect(curateSummary([d, d, d], 'f', none)).toBe('execution halted');
  });

  it('drops the lock-advice boilerplate and keeps the lock info', () => {
    const d: Diagnostic = {
      severity: 'error',
      summary: 'Error acquiring the state lock',
      detail:
        'Lock Info:\n  ID: abc\n  Who: root@pod\n\nOpenTofu acquires a state lock to protect the state from being written',
    };
    expect(curateSummary([d], 'f', none)).toBe(
      'Error acquiring the state lock: Lock Info: ID: abc Who: root@pod',
    );
  });

  it('redacts before cutting, so a cut never leaves the start of a secret', () => {
    const secret = 'S'.repeat(40);
    const detail = `${'x'.repeat(SUMMARY_MAX_BYTES - 30)} ${secret}`;
    const summary = curateSummary(
      [{ severity: 'error', summary: 'E', detail }],
      'f',
      createRedactor([secret]),
    );
    expect(summary).not.toContain('SSSS');
    expect(bytes(summary)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
  });

  it('cuts at 512 bytes of UTF-8 without splitting a character, and marks the cut', () => {
    const long = 'é'.repeat(400);
    const summary = curateSummary([{ severity: 'error', summary: long, detail: '' }], 'f', none);
    expect(bytes(summary)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
    expect(summary.endsWith('…')).toBe(true);
    expect(summary).not.toContain('\uFFFD');
  });

  it('leaves text within the budget alone', () => {
    expect(cutToBytes('short', 10)).toBe('short');
    expect(cutToBytes('0123456789ab', 10)).toBe('0123456…');
  });
});
