import { describe, expect, it } from 'vitest';
import {
  jsonDocument,
  readUiStream,
  readValidateDocument,
  uiMessage,
} from '../../../src/runner/machine-ui.ts';

const line = (value: unknown) => JSON.stringify(value);

describe("reading Terraform's machine-readable UI", () => {
  it('collects diagnostics (without snippets), the last change summary and output values', () => {
    const report = readUiStream([
      line({ type: 'version', '@message': 'OpenTofu 1.12.6' }),
      'not json at all',
      line({
        type: 'diagnostic',
        diagnostic: {
          severity: 'error',
          summary: 'Invalid value',
          detail: 'bad',
          range: { filename: 'main.tf', start: { line: 5 } },
          snippet: { code: 'token = "secret"' },
        },
      }),
      line({ type: 'change_summary', changes: { add: 1, change: 2, remove: 3, operation: 'plan' } }),
      line({
        type: 'outputs',
        outputs: { providerID: { sensitive: false, value: 'p://1' }, key: { sensitive: true } },
      }),
    ]);
    expect(report).toEqual({
      diagnostics: [{ severity: 'error', summary: 'Invalid value', detail: 'bad', where: 'main.tf:5' }],
      changes: { add: 1, change: 2, remove: 3 },
      outputs: { providerID: { sensitive: false, value: 'p://1' }, key: { sensitive: true } },
    });
  });

  it("ignores plan's outputs message, which carries actions and no values", () => {
    const report = readUiStream([
      line({ type: 'outputs', outputs: { providerID: { sensitive: false, action: 'create' } } }),
    ]);
    expect(report.outputs).toBeUndefined();
  });

  it('reads the validate document after warning text', () => {
    const doc = {
      valid: false,
      diagnostics: [{ severity: 'error', summary: 'Unsupported argument', detail: 'x' }],
    };
    const report = readValidateDocument(`Warning: CLI config\n{ oops\n${JSON.stringify(doc, null, 2)}`);
    expect(report.diagnostics).toEqual([{ severity: 'error', summary: 'Unsupported argument', detail: 'x' }]);
  });

  it('finds no document in plain text', () => {
    expect(jsonDocument('Error: something\n')).toBeUndefined();
  });

  it('shows a diagnostic as message, place and detail, never the snippet', () => {
    const text = uiMessage(
      line({
        type: 'diagnostic',
        '@message': 'Error: Invalid value',
        diagnostic: {
          severity: 'error',
          summary: 'Invalid value',
          detail: 'bad',
          range: { filename: 'v.json', start: { line: 1 } },
          snippet: { code: 'SNIPPET' },
        },
      }),
    );
    expect(text).toBe('Error: Invalid value (v.json:1): bad');
    expect(uiMessage('plain text')).toBeUndefined();
  });
});
