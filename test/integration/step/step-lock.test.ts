import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEP_LOCK_TTL_MS } from '../../../src/adapters/redis/adapter.ts';
import { keepStepLock } from '../../../src/step/step-lock.ts';
import { createStepEnv, refOf, type StepEnv } from './harness.ts';

// The step lock kept for a long step (DESIGN.md section 5 step 1, src/step/step-lock.ts), on the real
// Redis: extended while the step runs, a loss noticed, nothing extended after the step.

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('steplock');
});

afterAll(async () => {
  await env?.close();
});

const EVERY_MS = 150;

async function take(name: string): Promise<{ ref: ReturnType<typeof refOf>; token: string }> {
  const ref = refOf(env, 'TerraformMachine', name);
  const lock = await env.redis.takeStepLock(ref);
  if (lock.kind !== 'acquired') throw new Error(`take the step lock of ${name}: ${lock.kind}`);
  return { ref, token: lock.token };
}

async function remainingMs(ref: ReturnType<typeof refOf>): Promise<number> {
  return env.redis.client.pttl(env.redis.keys.stepLock(ref));
}

describe('step lock kept for a long step', () => {
  it('a running step keeps its lock: the TTL stays near 30 s however long the step takes', async () => {
    const { ref, token } = await take('long');
    const kept = keepStepLock(env.redis, ref, token, EVERY_MS);
    await sleep(1000);
    // Without extensions 1 s of the 30 s would be gone.
    expect(await remainingMs(ref)).toBeGreaterThan(STEP_LOCK_TTL_MS - 2 * EVERY_MS);
    expect(kept.lost()).toBe(false);
    await kept.stop();
    await sleep(600);
    expect(await remainingMs(ref)).toBeLessThan(STEP_LOCK_TTL_MS - 500);
    expect((await env.redis.releaseStepLock(ref, token)).kind).toBe('released');
  });

  it('a lock that expired and went to another step is lost, and the other holder is left alone', async () => {
    const { ref, token } = await take('lost');
    const kept = keepStepLock(env.redis, ref, token, EVERY_MS);
    await env.redis.client.del(env.redis.keys.stepLock(ref));
    const other = await take('lost');
    await sleep(3 * EVERY_MS);
    expect(kept.lost()).toBe(true);
    await kept.stop();
    expect(await env.redis.client.get(env.redis.keys.stepLock(ref))).toBe(other.token);
    expect((await env.redis.releaseStepLock(ref, other.token)).kind).toBe('released');
  });
});
