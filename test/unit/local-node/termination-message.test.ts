import { describe, expect, it } from 'vitest';
import { pullRetryStep } from '../../../src/local/node/pull-backoff.ts';
import { readCut, statusCut, terminationMessage } from '../../../src/local/node/termination-message.ts';

const noLog = () => Buffer.alloc(0);

describe('termination message cuts (kubelet)', () => {
  it('reading keeps the LAST 4096 bytes of the file', () => {
    const content = Buffer.concat([Buffer.alloc(1000, 'a'), Buffer.alloc(4096, 'b')]);
    expect(readCut(content).toString()).toBe('b'.repeat(4096));
  });

  const budgets = [
    { id: 'B1', name: 'init + source: 12 KiB / 2 leaves the whole 4096', containers: 2, kept: 4096 },
    { id: 'B2', name: 'four containers: 3072 each', containers: 4, kept: 3072 },
    { id: 'B3', name: 'six containers: 2048 each', containers: 6, kept: 2048 },
  ];
  it.each(budgets)('$id $name', ({ containers, kept }) => {
    expect(statusCut(Buffer.alloc(4096, 'x'), containers)).toHaveLength(kept);
  });

  it('C10: a 3,800-byte result in a two-container pod arrives whole', () => {
    const result = JSON.stringify({ version: 1, pad: 'r'.repeat(3760) });
    expect(result.length).toBeGreaterThan(3700);
    const message = terminationMessage({
      fileContent: Buffer.from(result),
      policy: 'File',
      exitCode: 0,
      logTail: noLog,
      containerCount: 2,
    });
    expect(JSON.parse(message)).toEqual(JSON.parse(result));
  });

  it('C10: over the cap, both cuts apply: the tail is read, then the head of it is kept', () => {
    const content = Buffer.from(`${'h'.repeat(1000)}${'m'.repeat(3000)}${'t'.repeat(1096)}`);
    const message = terminationMessage({
      fileContent: content,
      policy: 'File',
      exitCode: 1,
      logTail: noLog,
      containerCount: 4,
    });
    expect(message).toBe(`${'m'.repeat(3000)}${'t'.repeat(72)}`);
  });

  it('FallbackToLogsOnError: an empty file and a non-zero exit take the last 80 log lines', () => {
    const log = Buffer.from(`${Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n')}\n`);
    const message = terminationMessage({
      fileContent: Buffer.alloc(0),
      policy: 'FallbackToLogsOnError',
      exitCode: 2,
      logTail: () => log,
      containerCount: 1,
    });
    const lines = message.split('\n');
    expect(lines).toHaveLength(80);
    expect(lines[0]).toBe('line 20');
    expect(lines.at(-1)).toBe('line 99');
  });

  it('FallbackToLogsOnError does not read logs after exit 0, nor with policy File', () => {
    const input = { fileContent: Buffer.alloc(0), logTail: () => Buffer.from('log text'), containerCount: 1 };
    expect(terminationMessage({ ...input, policy: 'FallbackToLogsOnError', exitCode: 0 })).toBe('');
    expect(terminationMessage({ ...input, policy: 'File', exitCode: 1 })).toBe('');
  });
});

describe('pullRetryStep (C09 timings)', () => {
  const kubelet = { initialBackoffMs: 10_000, maxBackoffMs: 300_000, errImagePullMs: 10_000 };
  const rows = [
    {
      id: 'K1',
      name: 'first failure: 10 s back-off, ErrImagePull takes half',
      failures: 1,
      err: 5_000,
      backOff: 5_000,
    },
    { id: 'K2', name: 'second failure: 20 s', failures: 2, err: 10_000, backOff: 10_000 },
    { id: 'K3', name: 'fourth failure: 80 s', failures: 4, err: 10_000, backOff: 70_000 },
    { id: 'K4', name: 'capped at 300 s', failures: 12, err: 10_000, backOff: 290_000 },
  ];
  it.each(rows)('$id $name', ({ failures, err, backOff }) => {
    expect(pullRetryStep(failures, kubelet)).toEqual({ errImagePullMs: err, backOffMs: backOff });
  });
});
