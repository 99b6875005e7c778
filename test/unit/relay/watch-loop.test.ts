import { describe, expect, it } from 'vitest';
import type { RelayResource } from '../../../src/relay/resources.ts';
import { runWatchLoop, type WatchSource } from '../../../src/relay/watch-loop.ts';

// How the relay's list+watch loop reports a failed list (src/relay/watch-loop.ts): a first 429, which the API
// server answers while a resource's storage initialises, is expected; anything else, or a second failure, warns.

const resource = { apiVersion: 'v1', kind: 'Pod', namespace: 'team-a' } as unknown as RelayResource;

/** Runs the loop over lists failing with `codes` (then succeeding); answers the log lines by level. */
async function logsOf(codes: number[]): Promise<{ info: string[]; warn: string[] }> {
  const controller = new AbortController();
  const failures = [...codes];
  const source: WatchSource = {
    list: async () => {
      const code = failures.shift();
      if (code !== undefined) throw Object.assign(new Error(`HTTP ${code}`), { code });
      return { items: [], resourceVersion: '1' };
    },
    watch: async () => {
      controller.abort();
      return { kind: 'closed' };
    },
  };
  const logs = { info: [] as string[], warn: [] as string[] };
  await runWatchLoop({
    resource,
    source,
    emit: async () => undefined,
    signal: controller.signal,
    logger: {
      debug: () => undefined,
      info: (_: unknown, message?: string) => void logs.info.push(message ?? ''),
      warn: (_: unknown, message?: string) => void logs.warn.push(message ?? ''),
    } as never,
    backoff: { initialMs: 1, maxMs: 1 },
  });
  return logs;
}

describe('the relay list failing', () => {
  it('a first 429 (storage initialising) is said at info, not warned', async () => {
    const logs = await logsOf([429]);
    expect(logs.warn).toEqual([]);
    expect(logs.info).toContain('relay list: the API server is not ready for it yet (429); retrying');
  });

  it('a second failure in a row warns, as does any other failure', async () => {
    expect((await logsOf([429, 429])).warn).toEqual(['relay list: failed; retrying']);
    expect((await logsOf([500])).warn).toEqual(['relay list: failed; retrying']);
  });
});
