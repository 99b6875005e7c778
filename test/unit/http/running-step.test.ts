import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { awaitRunningStep } from '../../../src/http/running-step.ts';

const object: ObjectRef = { kind: 'TerraformMachine', namespace: 'ns', name: 'm' };
const version = { uid: 'u', resourceVersion: '7' };

/** A port whose answers follow a script of looks, over a fake clock that each pause moves on. */
function scripted(running: boolean[], own: boolean[], lookMs = 0) {
  const looks = { running: 0, own: 0 };
  const waits: number[] = [];
  let clockMs = 0;
  return {
    looks,
    waits,
    dedupe: {
      stepRunning: async () => {
        clockMs += lookMs;
        return running[Math.min(looks.running++, running.length - 1)] ?? false;
      },
      ownWrite: async () => {
        clockMs += lookMs;
        return own[Math.min(looks.own++, own.length - 1)] ?? false;
      },
    },
    options: {
      now: () => clockMs,
      wait: async (ms: number) => {
        waits.push(ms);
        clockMs += ms;
      },
    },
  };
}

describe('an event that finds a step of its object running', () => {
  it('no step running: answers false after one look, waits for nothing', async () => {
    const s = scripted([false], [false]);
    expect(await awaitRunningStep(s.dedupe, object, version, s.options)).toBe(false);
    expect(s.looks).toEqual({ running: 1, own: 0 });
    expect(s.waits).toEqual([]);
  });

  it('the running step marks the version as its own: stops at that look, the first ones quick', async () => {
    const s = scripted([true], [false, false, true]);
    expect(await awaitRunningStep(s.dedupe, object, version, s.options)).toBe(true);
    expect(s.waits).toEqual([5, 10, 20]);
  });

  it('the running step ends: stops waiting', async () => {
    const s = scripted([true, true, false], [false]);
    expect(await awaitRunningStep(s.dedupe, object, version, s.options)).toBe(true);
    expect(s.waits).toEqual([5, 10]);
  });

  it('a step that outlasts the limit: the clock bounds the wait, the looks included', async () => {
    const s = scripted([true], [false], 7);
    expect(await awaitRunningStep(s.dedupe, object, version, { ...s.options, limitMs: 300 })).toBe(true);
    // Pauses double up to 80 ms; 14 ms of looks per round count against the limit too.
    expect(s.waits).toEqual([5, 10, 20, 40, 80, 75]);
    // From the first look's answer: at most the limit and one round of looks (two of 7 ms).
    expect(s.options.now() - 7).toBeLessThanOrEqual(300 + 14);
  });
});
