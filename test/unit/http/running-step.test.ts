import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { awaitRunningStep } from '../../../src/http/running-step.ts';

const object: ObjectRef = { kind: 'TerraformMachine', namespace: 'ns', name: 'm' };
const version = { uid: 'u', resourceVersion: '7' };

/** A port whose answers follow a script of looks; `waits` records each pause asked for. */
function scripted(running: boolean[], own: boolean[]) {
  const looks = { running: 0, own: 0 };
  const waits: number[] = [];
  return {
    looks,
    waits,
    dedupe: {
      stepRunning: async () => running[Math.min(looks.running++, running.length - 1)] ?? false,
      ownWrite: async () => own[Math.min(looks.own++, own.length - 1)] ?? false,
    },
    wait: async (ms: number) => {
      waits.push(ms);
    },
  };
}

describe('an event that finds a step of its object running', () => {
  it('no step running: answers false after one look, waits for nothing', async () => {
    const s = scripted([false], [false]);
    expect(await awaitRunningStep(s.dedupe, object, version, { wait: s.wait })).toBe(false);
    expect(s.looks).toEqual({ running: 1, own: 0 });
    expect(s.waits).toEqual([]);
  });

  it('the running step marks the version as its own: stops waiting at that look', async () => {
    const s = scripted([true], [false, false, true]);
    expect(await awaitRunningStep(s.dedupe, object, version, { wait: s.wait, pollMs: 50 })).toBe(true);
    expect(s.waits).toEqual([50, 50, 50]);
  });

  it('the running step ends: stops waiting', async () => {
    const s = scripted([true, true, false], [false]);
    expect(await awaitRunningStep(s.dedupe, object, version, { wait: s.wait, pollMs: 50 })).toBe(true);
    expect(s.waits).toEqual([50, 50]);
  });

  it('a step that outlasts the limit: waits no longer than the limit, then the event is judged again', async () => {
    const s = scripted([true], [false]);
    const answer = await awaitRunningStep(s.dedupe, object, version, {
      wait: s.wait,
      pollMs: 50,
      limitMs: 200,
    });
    expect(answer).toBe(true);
    expect(s.waits.reduce((a, b) => a + b, 0)).toBe(200);
  });
});
