import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import type { JobRecord } from '../../../src/core/job-record.ts';
import { jobName } from '../../../src/core/names.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepConfig } from '../../../src/step/deps.ts';
import {
  healStaleLease,
  releaseRunGuards,
  renewRunGuards,
  runGuard,
  takeRunGuards,
} from '../../../src/step/leases.ts';
import { testStack } from '../../env/index.ts';

/**
 * The run guards on a real Redis (src/step/leases.ts): a Job slot never outlives the lease held under the
 * same Job's name, so healing the lease heals the slot. The fault suite found a slot held by a finished Job
 * that nothing freed (test/e2e/faults-fleet.test.ts); these are the orders of calls that left it.
 */

let redis: RedisAdapter;
const config = { maxActiveJobs: 10, clusterMaxActiveJobs: 5 } as StepConfig;

beforeAll(async () => {
  const stack = await testStack();
  redis = createRedisAdapter({ url: stack.redisUrl, keyPrefix: `guards-${randomBytes(3).toString('hex')}` });
  await redis.waitUntilReady(5000);
});

afterAll(async () => {
  await redis?.close();
});

/** A machine of its own, in cluster `c1`, and two Job names of it (attempts 1 and 2). */
function machine(name: string): { ref: ObjectRef; first: string; second: string } {
  const ref: ObjectRef = { kind: 'TerraformMachine', namespace: 'guards', name };
  const job = (attempt: number) =>
    jobName({ kind: ref.kind, name, op: 'apply', attempt, inputsHash: 'h', tick: '' });
  return { ref, first: job(1), second: job(2) };
}

function guardOf(ref: ObjectRef, job: string) {
  return runGuard(ref, 'c1', { op: 'apply', job, activeDeadlineSeconds: 600 });
}

/** Takes `job`'s guards; `live` says which lease holders still run (all, unless told). */
async function take(ref: ObjectRef, job: string, live: (holder: string) => boolean = () => true) {
  return takeRunGuards(redis, config, guardOf(ref, job), job, 'apply', live, () => undefined);
}

function finished(name: string): JobRecord {
  return {
    name,
    op: 'apply',
    attempt: 1,
    inputsHash: 'h',
    createdAtMs: 0,
    finished: true,
    bookkept: true,
    deleting: false,
  };
}

async function slotsInUse(): Promise<{ installation: number; cluster: number | undefined }> {
  const usage = await redis.jobSlots.usage({ namespace: 'guards', name: 'c1' });
  if (usage.kind !== 'counted') throw new Error(`Redis did not answer: ${usage.cause.message}`);
  return { installation: usage.installation, cluster: usage.cluster };
}

describe('run guards: a slot never outlives its lease', () => {
  it('a renewal that comes after the Job was bookkept re-takes lease and slot together, and the next rest step heals both', async () => {
    const { ref, first } = machine('late-renew');
    const guard = guardOf(ref, first);
    const before = await slotsInUse();
    expect(await take(ref, first)).toEqual({ kind: 'acquired' });
    expect(await releaseRunGuards(redis, guard, first)).toBe('released');
    // The watching step read the Job running before another step bookkept it.
    expect(await renewRunGuards(redis, guard, first)).toBe('renewed');
    expect((await slotsInUse()).installation).toBe(before.installation + 1);
    expect(await healStaleLease(redis, ref, 'c1', [finished(first)])).toBe(true);
    expect(await slotsInUse()).toEqual(before);
    expect((await redis.runLeases.read({ object: ref, clusterName: 'c1' })).kind).toBe('free');
  });

  it('a renewal of a finished Job whose lease a newer Job holds takes no slot', async () => {
    const { ref, first, second } = machine('renew-under-other');
    const before = await slotsInUse();
    expect(await take(ref, second)).toEqual({ kind: 'acquired' });
    expect(await renewRunGuards(redis, guardOf(ref, first), first)).toBe('held-by-other');
    expect((await slotsInUse()).installation).toBe(before.installation + 1);
    expect(await releaseRunGuards(redis, guardOf(ref, second), second)).toBe('released');
    expect(await slotsInUse()).toEqual(before);
  });

  it("a new run frees the stale lease of the object's finished Job and that Job's slot before taking its own", async () => {
    const { ref, first, second } = machine('stale-holder');
    const before = await slotsInUse();
    expect(await take(ref, first)).toEqual({ kind: 'acquired' });
    // `first` finished and its release was lost; `second` starts, seeing `first` not live.
    const live = (holder: string) => holder !== first;
    expect(await take(ref, second, live)).toEqual({ kind: 'acquired' });
    expect((await slotsInUse()).installation).toBe(before.installation + 1);
    expect(await releaseRunGuards(redis, guardOf(ref, second), second)).toBe('released');
    expect(await slotsInUse()).toEqual(before);
  });

  it("a release frees the Job's slot even when its lease is already gone or another Job's", async () => {
    const { ref, first, second } = machine('release-order');
    const before = await slotsInUse();
    expect(await take(ref, first)).toEqual({ kind: 'acquired' });
    const lease = await redis.runLeases.read({ object: ref, clusterName: 'c1' });
    if (lease.kind !== 'held') throw new Error(`lease ${lease.kind}`);
    // The lease alone was lost (a flush of one key, a release that half-happened before this change).
    await redis.runLeases.release({ object: ref, clusterName: 'c1' }, lease.token);
    expect(await take(ref, second)).toEqual({ kind: 'acquired' });
    expect(await releaseRunGuards(redis, guardOf(ref, first), first)).toBe('released');
    expect((await redis.runLeases.read({ object: ref, clusterName: 'c1' })).kind).toBe('held');
    expect((await slotsInUse()).installation).toBe(before.installation + 1);
    expect(await releaseRunGuards(redis, guardOf(ref, second), second)).toBe('released');
    expect(await slotsInUse()).toEqual(before);
  });
});
