import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/core/redaction.ts';
import { RUN_LOG_MAX_BYTES } from '../../../src/core/run-log.ts';
import { RunnerLog } from '../../../src/runner/log.ts';

// What the runner keeps of its own output for the run log Secret (src/core/run-log.ts): every line it
// printed, bounded in memory, redacted again with the newest redactor.

function capture(): { log: RunnerLog; printed: () => string } {
  const lines: string[] = [];
  return { log: new RunnerLog((_stream, text) => lines.push(text)), printed: () => lines.join('') };
}

describe('RunnerLog.written', () => {
  it('W1 holds exactly what was printed, stdout and stderr as they came', () => {
    const { log, printed } = capture();
    log.info('step init: init started');
    log.relay('init', 'stdout', 'Initializing the backend...');
    log.error('something went wrong');
    expect(log.written()).toEqual({ text: printed(), droppedBytes: 0 });
  });

  it('W2 keeps at least the last 64 KiB of a long run, whole lines, and counts what it dropped', () => {
    const { log, printed } = capture();
    for (let n = 0; n < 5000; n += 1) log.relay('apply', 'stdout', `line ${n} ${'é'.repeat(20)}`);
    const kept = log.written();
    const total = Buffer.byteLength(printed());
    expect(total).toBeGreaterThan(3 * RUN_LOG_MAX_BYTES);
    expect(Buffer.byteLength(kept.text)).toBeGreaterThanOrEqual(RUN_LOG_MAX_BYTES);
    expect(Buffer.byteLength(kept.text)).toBeLessThanOrEqual(2 * RUN_LOG_MAX_BYTES);
    expect(kept.droppedBytes + Buffer.byteLength(kept.text)).toBe(total);
    expect(printed().endsWith(kept.text)).toBe(true);
    expect(kept.text.startsWith('[apply] line ')).toBe(true);
  });

  it('W3 masks again with the newest redactor: a secret learned late (a sensitive output) is hidden', () => {
    const { log } = capture();
    log.useRedactor(createRedactor(['tok-123-canary']));
    log.relay('apply', 'stdout', 'token tok-123-canary and password s3cr3t-output');
    log.useRedactor(createRedactor(['tok-123-canary', 's3cr3t-output']));
    expect(log.written().text).toBe('[apply] token [redacted] and password [redacted]\n');
  });
});
