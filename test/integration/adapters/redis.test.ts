import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { createRedisClient, type RedisEndpoint, waitUntilReady } from '../../../src/adapters/redis/client.ts';
import type { ObjectId } from '../../../src/adapters/redis/keys.ts';
import { FENCE_TTL_MS } from '../../../src/adapters/redis/scripts.ts';
import { type LocalRedis, startRedis } from '../../../src/local/redis-server.ts';
import { testStack } from '../../env/index.ts';

// The Redis adapter against real Redis: the behaviour on each topology the test env runs (one
// redis-server, a Redis Cluster of 3 masters and 3 replicas, a master and replica under 3 sentinels; issue
// 12), and outages and restarts on a dedicated redis-server this file starts and restarts on its own
// loopback port. Failovers of the Cluster and of Sentinel are exercised end to end (test/e2e/failover.test.ts),
// and Sentinel failovers against many clients in test/integration/adapters/redis-failover.test.ts.

// Tests of what a timeout or an outage answers use a short command timeout; every other test checks what
// Redis answers, so its adapters wait long enough that a loaded machine (CI runs the e2e suites beside this
// file) never turns an answer into "unknown" (stop 27's CI: 9 of 10 concurrent SETs timed out at 300 ms).
const COMMAND_TIMEOUT_MS = 300;
const ANSWER_TIMEOUT_MS = 5000;
const mA: ObjectId = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' };
const mB: ObjectId = { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-b' };
const cA: ObjectId = { kind: 'TerraformCluster', namespace: 'team-a', name: 'c-a' };

function adapterFor(endpoint: RedisEndpoint, commandTimeoutMs = ANSWER_TIMEOUT_MS): RedisAdapter {
  return createRedisAdapter({
    ...endpoint,
    keyPrefix: `test-${randomBytes(4).toString('hex')}`,
    commandTimeoutMs,
  });
}

/** A second adapter on the same keys: another handler instance. */
function peerOf(
  adapter: RedisAdapter,
  endpoint: RedisEndpoint,
  commandTimeoutMs = ANSWER_TIMEOUT_MS,
): RedisAdapter {
  return createRedisAdapter({
    ...endpoint,
    keyPrefix: adapter.keys.prefix,
    commandTimeoutMs,
  });
}

const topologies: { name: string; endpoint: () => RedisEndpoint }[] = [
  { name: 'one node', endpoint: () => ({ url: testStack().redisUrl }) },
  { name: 'a Redis Cluster', endpoint: () => ({ topology: testStack().redisCluster }) },
  { name: 'Sentinel', endpoint: () => ({ topology: testStack().redisSentinel }) },
];

describe.each(topologies)('on $name', ({ endpoint: endpointOf }) => {
  let shared: RedisAdapter;
  let sharedEndpoint: RedisEndpoint;

  beforeAll(async () => {
    sharedEndpoint = endpointOf();
    shared = adapterFor(sharedEndpoint);
    await shared.waitUntilReady(5000);
  });

  afterAll(async () => {
    await shared.close();
  });

  describe('step lock', () => {
    it('20 concurrent takers: exactly one acquires, the others see its token as holder', async () => {
      const object: ObjectId = { ...mA, name: `race-${randomBytes(3).toString('hex')}` };
      const peers = Array.from({ length: 20 }, () => peerOf(shared, sharedEndpoint));
      await Promise.all(peers.map((peer) => peer.waitUntilReady(5000)));
      const results = await Promise.all(peers.map((peer) => peer.takeStepLock(object)));
      const acquired = results.flatMap((result) => (result.kind === 'acquired' ? [result.token] : []));
      expect(acquired).toHaveLength(1);
      const held = results.filter((result) => result.kind === 'held');
      expect(held).toHaveLength(19);
      for (const result of held) expect(result).toEqual({ kind: 'held', holder: acquired[0] });
      await Promise.all(peers.map((peer) => peer.close()));
    });

    it('release and extend compare the token: a foreign token changes nothing', async () => {
      const take = await shared.takeStepLock(mB);
      if (take.kind !== 'acquired') throw new Error(`expected acquired, got ${take.kind}`);
      expect(await shared.releaseStepLock(mB, 'not-the-token')).toEqual({ kind: 'not-held' });
      expect(await shared.extendStepLock(mB, 'not-the-token')).toEqual({ kind: 'lost' });
      expect(await shared.takeStepLock(mB)).toEqual({ kind: 'held', holder: take.token });
      const ttlMs = await shared.client.pttl(shared.keys.stepLock(mB));
      expect(ttlMs).toBeGreaterThan(25_000);
      expect(ttlMs).toBeLessThanOrEqual(30_000);
      expect(await shared.extendStepLock(mB, take.token)).toEqual({ kind: 'renewed' });
      expect(await shared.releaseStepLock(mB, take.token)).toEqual({ kind: 'released' });
      expect((await shared.takeStepLock(mB)).kind).toBe('acquired');
    });
  });

  describe('named lease (sweep, relay leader)', () => {
    it('one holder at a time; the holder re-takes idempotently; expiry frees it', async () => {
      expect(await shared.takeLease('sweep', 'instance-1', 1)).toEqual({
        kind: 'acquired',
        token: 'instance-1',
      });
      expect(await shared.takeLease('sweep', 'instance-2', 1)).toEqual({
        kind: 'held',
        holder: 'instance-1',
      });
      expect(await shared.takeLease('sweep', 'instance-1', 1)).toEqual({
        kind: 'acquired',
        token: 'instance-1',
      });
      expect(await shared.renewLease('sweep', 'instance-2', 1)).toEqual({ kind: 'lost' });
      await sleep(1100);
      expect(await shared.takeLease('sweep', 'instance-2', 1)).toEqual({
        kind: 'acquired',
        token: 'instance-2',
      });
      expect(await shared.releaseLease('sweep', 'instance-1')).toEqual({ kind: 'not-held' });
      expect(await shared.releaseLease('sweep', 'instance-2')).toEqual({ kind: 'released' });
    });
  });

  describe('run leases', () => {
    it('C17: a renewed lease outlives its TTL; another caller and a foreign release change nothing', async () => {
      const scope = { object: mA };
      const take = await shared.runLeases.take(scope, 'captf-m-m-a-apply-a1-aaaaaa', 'solo', 1);
      if (take.kind !== 'acquired') throw new Error(`expected acquired, got ${take.kind}`);
      for (let renewal = 0; renewal < 4; renewal += 1) {
        await sleep(500);
        expect(await shared.runLeases.renew(scope, take.token, 1)).toEqual({ kind: 'renewed' });
      }
      // 2 s after a 1 s grant: still the first holder's.
      const timerStep = await shared.runLeases.take(scope, 'captf-m-m-a-apply-a2-bbbbbb', 'solo', 1);
      expect(timerStep).toEqual({ kind: 'held', holder: take.token.holder, fence: take.token.fence });
      const foreign = [
        { holder: take.token.holder, fence: take.token.fence + 1 },
        { holder: 'captf-m-m-a-apply-a2-bbbbbb', fence: take.token.fence },
      ];
      for (const token of foreign) {
        expect(await shared.runLeases.release(scope, token)).toEqual({ kind: 'not-held' });
        expect(await shared.runLeases.renew(scope, token, 1)).toEqual({ kind: 'lost' });
      }
      expect(await shared.runLeases.read(scope)).toEqual({ kind: 'held', token: take.token });
      expect(await shared.runLeases.release(scope, take.token)).toEqual({ kind: 'released' });
      expect(await shared.runLeases.read(scope)).toEqual({ kind: 'free' });
    });

    it('an unrenewed lease expires and the next grant carries a higher fence', async () => {
      const scope = { object: mB };
      const first = await shared.runLeases.take(scope, 'J1', 'solo', 1);
      if (first.kind !== 'acquired') throw new Error(`expected acquired, got ${first.kind}`);
      await sleep(1100);
      const second = await shared.runLeases.take(scope, 'J2', 'solo', 60);
      if (second.kind !== 'acquired') throw new Error(`expected acquired, got ${second.kind}`);
      expect(second.token.fence).toBeGreaterThan(first.token.fence);
      // The group's counter is not kept for ever (a deleted object's would stay): a week after its last grant.
      const counterTtl = await shared.client.pttl(shared.keys.leaseGroup(mB, undefined).fence);
      expect(counterTtl).toBeGreaterThan(FENCE_TTL_MS - 60_000);
      expect(counterTtl).toBeLessThanOrEqual(FENCE_TTL_MS);
      // The first holder, come back late, can neither renew nor release the new grant.
      expect(await shared.runLeases.renew(scope, first.token, 60)).toEqual({ kind: 'lost' });
      expect(await shared.runLeases.release(scope, first.token)).toEqual({ kind: 'not-held' });
      expect(await shared.runLeases.read(scope)).toEqual({ kind: 'held', token: second.token });
    });

    it('the same Job name re-takes its own grant (a retried step): same fence, retaken', async () => {
      const scope = { object: { ...mA, name: 'retake' } };
      const first = await shared.runLeases.take(scope, 'J1', 'solo', 60);
      const again = await shared.runLeases.take(scope, 'J1', 'solo', 60);
      if (first.kind !== 'acquired' || again.kind !== 'acquired') throw new Error('expected two acquired');
      expect(first.retaken).toBe(false);
      expect(again).toEqual({ kind: 'acquired', token: first.token, retaken: true, liveMemberLeases: 0 });
    });

    it('writer preference: a cluster lease turns new machine takes away; the cluster sees live machine leases', async () => {
      const clusterName = `cl-${randomBytes(3).toString('hex')}`;
      const machine = await shared.runLeases.take({ object: mA, clusterName }, 'JM', 'member-writer', 60);
      if (machine.kind !== 'acquired') throw new Error(`expected acquired, got ${machine.kind}`);
      const reader = await shared.runLeases.take({ object: mB, clusterName }, 'JR', 'member-reader', 60);
      if (reader.kind !== 'acquired') throw new Error(`expected acquired, got ${reader.kind}`);
      // The cluster takes its leases and learns that one machine apply/destroy is live (drift is not counted).
      expect(await shared.runLeases.readCluster('team-a', clusterName)).toEqual({
        kind: 'read',
        clusterLease: undefined,
        liveMemberLeases: 1,
      });
      const cluster = await shared.runLeases.take({ object: cA, clusterName }, 'JC', 'cluster-writer', 60);
      if (cluster.kind !== 'acquired') throw new Error(`expected acquired, got ${cluster.kind}`);
      expect(cluster.liveMemberLeases).toBe(1);
      expect(await shared.runLeases.readCluster('team-a', clusterName)).toEqual({
        kind: 'read',
        clusterLease: cluster.token,
        liveMemberLeases: 1,
      });
      // A new machine op is refused while the cluster lease is live; nothing is taken for it.
      const pool: ObjectId = { kind: 'TerraformMachinePool', namespace: 'team-a', name: 'mp-a' };
      expect(await shared.runLeases.take({ object: pool, clusterName }, 'JP', 'member-writer', 60)).toEqual({
        kind: 'cluster-busy',
        holder: 'JC',
        fence: cluster.token.fence,
      });
      expect(await shared.runLeases.read({ object: pool, clusterName })).toEqual({ kind: 'free' });
      // What a waiting member reads of its lease group (one round trip): the cluster's grant, its own none.
      expect(await shared.runLeases.readMember({ object: pool, clusterName })).toEqual({
        kind: 'read',
        run: undefined,
        clusterLease: cluster.token,
      });
      expect(await shared.runLeases.readMember({ object: mA, clusterName })).toEqual({
        kind: 'read',
        run: machine.token,
        clusterLease: cluster.token,
      });
      // The running machine keeps its grant (a retried step re-takes it) and, once released, the cluster sees 0.
      expect((await shared.runLeases.take({ object: mA, clusterName }, 'JM', 'member-writer', 60)).kind).toBe(
        'acquired',
      );
      expect(await shared.runLeases.release({ object: mA, clusterName }, machine.token)).toEqual({
        kind: 'released',
      });
      const recheck = await shared.runLeases.take({ object: cA, clusterName }, 'JC', 'cluster-writer', 60);
      expect(recheck).toEqual({ kind: 'acquired', token: cluster.token, retaken: true, liveMemberLeases: 0 });
      // Releasing the cluster's grant frees the cluster lease too.
      expect(await shared.runLeases.release({ object: cA, clusterName }, cluster.token)).toEqual({
        kind: 'released',
      });
      expect(await shared.runLeases.readCluster('team-a', clusterName)).toEqual({
        kind: 'read',
        clusterLease: undefined,
        liveMemberLeases: 0,
      });
      expect(
        (await shared.runLeases.take({ object: pool, clusterName }, 'JP', 'member-writer', 60)).kind,
      ).toBe('acquired');
    });

    it('a machine lease that expired no longer counts for the cluster', async () => {
      const clusterName = `cl-${randomBytes(3).toString('hex')}`;
      expect((await shared.runLeases.take({ object: mA, clusterName }, 'JM', 'member-writer', 1)).kind).toBe(
        'acquired',
      );
      await sleep(1100);
      const cluster = await shared.runLeases.take({ object: cA, clusterName }, 'JC', 'cluster-writer', 60);
      expect(cluster.kind === 'acquired' && cluster.liveMemberLeases).toBe(0);
    });
  });

  describe('Job slots', () => {
    it('takes a slot only below the limits, atomically per installation and cluster', async () => {
      const slots = adapterFor(sharedEndpoint);
      await slots.waitUntilReady(5000);
      const limits = { installation: 3, cluster: 2 };
      const inCluster = (job: string) => ({ namespace: 'team-a', job, clusterName: 'cl-1' });
      expect(await slots.jobSlots.take(inCluster('J1'), limits, 60)).toEqual({ kind: 'acquired' });
      expect(await slots.jobSlots.take(inCluster('J2'), limits, 60)).toEqual({ kind: 'acquired' });
      expect(await slots.jobSlots.take(inCluster('J3'), limits, 60)).toEqual({
        kind: 'full',
        scope: 'cluster',
        active: 2,
        limit: 2,
      });
      // A Job outside that cluster still fits the installation, then the installation is full.
      expect(await slots.jobSlots.take({ namespace: 'team-b', job: 'J4' }, limits, 60)).toEqual({
        kind: 'acquired',
      });
      expect(await slots.jobSlots.take({ namespace: 'team-b', job: 'J5' }, limits, 60)).toEqual({
        kind: 'full',
        scope: 'installation',
        active: 3,
        limit: 3,
      });
      // A Job that holds its slot keeps it even at the limit (a retried step); the refused Jobs took nothing.
      expect(await slots.jobSlots.take(inCluster('J1'), limits, 60)).toEqual({ kind: 'acquired' });
      expect(await slots.jobSlots.usage({ namespace: 'team-a', name: 'cl-1' })).toEqual({
        kind: 'counted',
        installation: 3,
        cluster: 2,
      });
      expect(await slots.jobSlots.release(inCluster('J1'))).toEqual({ kind: 'released' });
      expect(await slots.jobSlots.take(inCluster('J3'), limits, 60)).toEqual({ kind: 'acquired' });
      await slots.close();
    });

    it('drift and refresh pass 80 % of the limit: they wait where an apply still fits', async () => {
      const slots = adapterFor(sharedEndpoint);
      await slots.waitUntilReady(5000);
      const limit = 5;
      for (const job of ['J1', 'J2', 'J3', 'J4']) {
        expect(
          await slots.jobSlots.take(
            { namespace: 'team-a', job },
            { installation: limit, cluster: limit },
            60,
          ),
        ).toEqual({
          kind: 'acquired',
        });
      }
      const eighty = Math.floor(limit * 0.8);
      expect(
        await slots.jobSlots.take(
          { namespace: 'team-a', job: 'drift' },
          { installation: eighty, cluster: eighty },
          60,
        ),
      ).toEqual({
        kind: 'full',
        scope: 'installation',
        active: 4,
        limit: 4,
      });
      expect(
        await slots.jobSlots.take(
          { namespace: 'team-a', job: 'apply' },
          { installation: limit, cluster: limit },
          60,
        ),
      ).toEqual({
        kind: 'acquired',
      });
      await slots.close();
    });

    it('a crashed holder cannot leak a slot: it frees itself at expiry unless renewed', async () => {
      const slots = adapterFor(sharedEndpoint);
      await slots.waitUntilReady(5000);
      const limits = { installation: 1, cluster: 1 };
      const renewed = { namespace: 'team-a', job: 'renewed' };
      expect(await slots.jobSlots.take({ namespace: 'team-a', job: 'crashed' }, limits, 1)).toEqual({
        kind: 'acquired',
      });
      await sleep(1100);
      expect(await slots.jobSlots.take(renewed, limits, 1)).toEqual({ kind: 'acquired' });
      await sleep(600);
      expect(await slots.jobSlots.renew(renewed, 1)).toEqual({ kind: 'renewed' });
      await sleep(600);
      expect((await slots.jobSlots.take({ namespace: 'team-a', job: 'other' }, limits, 1)).kind).toBe('full');
      expect(await slots.jobSlots.renew({ namespace: 'team-a', job: 'crashed' }, 1)).toEqual({
        kind: 'lost',
      });
      await slots.close();
    });
  });

  describe('requeue schedule', () => {
    it('the earliest due time wins (ZADD LT)', async () => {
      const member = `TerraformMachine/team-a/due-${randomBytes(3).toString('hex')}`;
      const late = await shared.schedule.add(member, 60_000);
      const early = await shared.schedule.add(member, 1_000);
      const later = await shared.schedule.add(member, 600_000);
      if (late.kind !== 'scheduled' || early.kind !== 'scheduled' || later.kind !== 'scheduled') {
        throw new Error('expected scheduled');
      }
      expect(late.dueMs - early.dueMs).toBeGreaterThan(58_000);
      expect(later.dueMs).toBe(early.dueMs);
      expect(await shared.schedule.scheduledAt(member)).toEqual({ kind: 'scheduled', dueMs: early.dueMs });
    });

    it('ensure schedules only a member without a requeue (ZADD NX): the sweep never brings one forward', async () => {
      const member = `TerraformMachine/team-a/ensure-${randomBytes(3).toString('hex')}`;
      const first = await shared.schedule.ensure(member, 600_000);
      const again = await shared.schedule.ensure(member, 1_000);
      if (first.kind !== 'scheduled' || again.kind !== 'scheduled') throw new Error('expected scheduled');
      expect(again.dueMs).toBe(first.dueMs);
      const earlier = await shared.schedule.add(member, 1_000);
      if (earlier.kind !== 'scheduled') throw new Error('expected scheduled');
      expect(earlier.dueMs).toBeLessThan(first.dueMs);
    });

    it('dependents: waiters register under what they wait for and are taken once, atomically', async () => {
      const on = {
        kind: 'TerraformCluster' as const,
        namespace: 'team-a',
        name: `c-${randomBytes(3).toString('hex')}`,
      };
      const m1 = { kind: 'TerraformMachine' as const, namespace: 'team-a', name: 'm-1' };
      const m2 = { kind: 'TerraformMachine' as const, namespace: 'team-a', name: 'm-2' };
      expect(await shared.dependents.add(on, m1, 60)).toEqual({ kind: 'added' });
      expect(await shared.dependents.add(on, m2, 60)).toEqual({ kind: 'added' });
      expect(await shared.dependents.add(on, m1, 60)).toEqual({ kind: 'added' });
      const taken = await shared.dependents.take(on);
      if (taken.kind !== 'taken') throw new Error('expected taken');
      expect(taken.members.sort()).toEqual(['TerraformMachine/team-a/m-1', 'TerraformMachine/team-a/m-2']);
      expect(await shared.dependents.take(on)).toEqual({ kind: 'taken', members: [] });
    });

    it('claim hides due members for the visibility timeout; unacknowledged ones reappear', async () => {
      const schedule = adapterFor(sharedEndpoint);
      await schedule.waitUntilReady(5000);
      const members = Array.from({ length: 6 }, (_, index) => `TerraformMachine/team-a/m-${index}`);
      for (const member of members) await schedule.schedule.add(member, 0);
      await schedule.schedule.add('TerraformMachine/team-a/not-due', 60_000);
      const first = await schedule.schedule.claimDue(100, 700);
      expect(first.unknown).toBeUndefined();
      expect(first.claims.map((claim) => claim.member).sort()).toEqual(members);
      // Claimed members are hidden: a concurrent tick gets nothing.
      expect((await schedule.schedule.claimDue(100, 700)).claims).toEqual([]);
      const [acked, rescheduled, ...dropped] = first.claims;
      if (!acked || !rescheduled) throw new Error('expected claims');
      expect(await schedule.schedule.ack(acked)).toEqual({ kind: 'acknowledged' });
      expect(await schedule.schedule.ack(rescheduled, 60_000)).toEqual({ kind: 'acknowledged' });
      await sleep(800);
      const again = await schedule.schedule.claimDue(100, 700);
      expect(again.claims.map((claim) => claim.member).sort()).toEqual(
        dropped.map((claim) => claim.member).sort(),
      );
      expect(await schedule.schedule.scheduledAt(acked.member)).toEqual({ kind: 'absent' });
      const next = await schedule.schedule.scheduledAt(rescheduled.member);
      expect(next.kind === 'scheduled' && next.dueMs - rescheduled.claimScore).toBeGreaterThan(50_000);
      await schedule.close();
    });

    it('a claim limit is honoured across shards', async () => {
      const schedule = adapterFor(sharedEndpoint);
      await schedule.waitUntilReady(5000);
      for (let index = 0; index < 20; index += 1)
        await schedule.schedule.add(`TerraformMachine/team-a/l-${index}`, 0);
      const claimed = await schedule.schedule.claimDue(7, 60_000);
      expect(claimed.claims).toHaveLength(7);
      const rest = await schedule.schedule.claimDue(100, 60_000);
      expect(rest.claims).toHaveLength(13);
      await schedule.close();
    });

    it('a requeue added during a claim is not lost by the acknowledgement', async () => {
      const schedule = adapterFor(sharedEndpoint);
      await schedule.waitUntilReady(5000);
      const member = 'TerraformMachine/team-a/busy';
      await schedule.schedule.add(member, 0);
      const [claim] = (await schedule.schedule.claimDue(1, 60_000)).claims;
      if (!claim) throw new Error('expected a claim');
      // An event arrives while the step runs: it wants a look in 2 s, earlier than the claim's 60 s.
      const readded = await schedule.schedule.add(member, 2_000);
      expect(await schedule.schedule.ack(claim)).toEqual({ kind: 'superseded' });
      expect(await schedule.schedule.scheduledAt(member)).toEqual(readded);
      await schedule.close();
    });
  });

  describe('timeouts', () => {
    it('a command that times out is unknown, not held: the take may still land once Redis answers', async () => {
      const adapter = adapterFor(sharedEndpoint, COMMAND_TIMEOUT_MS);
      await adapter.waitUntilReady(5000);
      const object: ObjectId = { ...mB, name: `slow-${randomBytes(3).toString('hex')}` };
      // The node serving the lease's hash slot is alive but busy for 2 s (a script with a key of that slot
      // blocks it): the take is sent, then times out here.
      const blocker = createRedisClient({ ...sharedEndpoint, commandTimeoutMs: 5000 });
      await waitUntilReady(blocker, 5000);
      // The node must know the script already: a timed-out EVALSHA that meets NOSCRIPT is never followed
      // by its EVAL, so a first call on a fresh node could not land late.
      const warm = await adapter.runLeases.take({ object }, 'J-warm', 'solo', 600);
      if (warm.kind !== 'acquired') throw new Error(`warm-up take: ${warm.kind}`);
      await adapter.runLeases.release({ object }, warm.token);
      const fence = adapter.keys.leaseGroup(object, undefined).fence;
      // A Cluster client opens its connection to a node on its first command for that node's slots: open it
      // now, so the script below is on the wire at once rather than behind a connect on a loaded machine
      // (the take would then reach the node first and land).
      await blocker.exists(fence);
      const busy = blocker.eval(
        `local start = redis.call('TIME')
repeat local now = redis.call('TIME') until (now[1] - start[1]) * 1000000 + (now[2] - start[2]) > 2000000
return 1`,
        1,
        fence,
      );
      let busyEnded = false;
      void busy.then(() => {
        busyEnded = true;
      });
      // Time for the node to read the script and start it; the take's 300 ms timeout still ends well inside
      // the script's 2 s.
      await sleep(200);
      const take = await adapter.runLeases.take({ object }, 'J-slow', 'solo', 600);
      expect(take.kind).toBe('unknown');
      // Answered by the timeout while the node was still busy, not by the node once it was free: an order,
      // which a loaded machine cannot turn around (the 300 ms timer fires before the 2 s script's reply).
      expect(busyEnded).toBe(false);
      await busy;
      // The timed-out command ran after all, once: the caller could not have known, which is why it is
      // "unknown"; no client resent it (the same holder re-takes its own grant with the same fence).
      const read = await adapter.runLeases.read({ object });
      expect(read.kind === 'held' && read.token.holder).toBe('J-slow');
      const again = await adapter.runLeases.take({ object }, 'J-slow', 'solo', 600);
      expect(again).toMatchObject({ kind: 'acquired', retaken: true });
      expect(read.kind === 'held' && again.kind === 'acquired' && again.token.fence).toBe(
        read.kind === 'held' && read.token.fence,
      );
      blocker.disconnect();
      await adapter.close();
    });
  });

  describe('cluster facts (issue 22)', () => {
    const fact = (uid: string | undefined, resourceVersion: string, payload: string) => ({
      uid,
      resourceVersion,
      payload,
    });

    it('keeps the newest version of the same object, fills a version known without content, and reads both parts in one call', async () => {
      const store = shared.clusterFacts;
      const ns = `ns-${randomBytes(3).toString('hex')}`;
      expect(await store.get(ns, 'c')).toEqual({ kind: 'found', facts: {} });
      expect(await store.put(ns, 'c', 'owning', fact('u1', '100', '{"ready":false}'), 60)).toEqual({
        kind: 'stored',
      });
      // Older and equal versions of the same object never replace it; a newer one does.
      expect(await store.put(ns, 'c', 'owning', fact('u1', '99', '{"ready":true}'), 60)).toEqual({
        kind: 'kept',
      });
      expect(await store.put(ns, 'c', 'owning', fact('u1', '100', '{"ready":true}'), 60)).toEqual({
        kind: 'kept',
      });
      // 1000 > 200 although it sorts lower as text: versions compare as decimals.
      expect((await store.put(ns, 'c', 'owning', fact('u1', '200', ''), 60)).kind).toBe('stored');
      expect((await store.put(ns, 'c', 'owning', fact('u1', '1000', ''), 60)).kind).toBe('stored');
      expect((await store.put(ns, 'c', 'owning', fact('u1', '200', '{"ready":true}'), 60)).kind).toBe('kept');
      // The same version with the content the stored one lacked fills it.
      expect((await store.put(ns, 'c', 'owning', fact('u1', '1000', '{"ready":true}'), 60)).kind).toBe(
        'stored',
      );
      // A re-created object (another uid) replaces it whatever its version.
      expect((await store.put(ns, 'c', 'capi', fact('k1', '500', '{"paused":true}'), 60)).kind).toBe(
        'stored',
      );
      expect((await store.put(ns, 'c', 'capi', fact('k2', '5', '{"paused":false}'), 60)).kind).toBe('stored');
      expect(await store.get(ns, 'c')).toEqual({
        kind: 'found',
        facts: {
          owning: fact('u1', '1000', '{"ready":true}'),
          capi: fact('k2', '5', '{"paused":false}'),
        },
      });
    });

    it('an absence fills only an empty key; a drop forgets one part; entries expire', async () => {
      const store = shared.clusterFacts;
      const ns = `ns-${randomBytes(3).toString('hex')}`;
      expect((await store.put(ns, 'c', 'capi', fact(undefined, '0', 'absent'), 60)).kind).toBe('stored');
      expect(await store.get(ns, 'c')).toEqual({
        kind: 'found',
        facts: { capi: fact(undefined, '0', 'absent') },
      });
      expect((await store.put(ns, 'c', 'capi', fact('k1', '7', '{"paused":false}'), 60)).kind).toBe('stored');
      // Found absent by a read that began before the Cluster was created: kept out.
      expect((await store.put(ns, 'c', 'capi', fact(undefined, '0', 'absent'), 60)).kind).toBe('kept');
      expect((await store.put(ns, 'c', 'owning', fact('u1', '8', '{}'), 1)).kind).toBe('stored');
      expect(await store.drop(ns, 'c', 'capi')).toEqual({ kind: 'done' });
      expect(await store.get(ns, 'c')).toEqual({ kind: 'found', facts: { owning: fact('u1', '8', '{}') } });
      await sleep(1100);
      expect(await store.get(ns, 'c')).toEqual({ kind: 'found', facts: {} });
    });
  });

  describe('event dedupe', () => {
    it('the first delivery of uid@resourceVersion passes; replays are seen until the TTL', async () => {
      const event = { uid: randomBytes(8).toString('hex'), resourceVersion: '100' };
      expect(await shared.markEventSeen(event, 1)).toEqual({ kind: 'first' });
      expect(await shared.markEventSeen(event, 1)).toEqual({ kind: 'seen' });
      expect(await shared.markEventSeen({ ...event, resourceVersion: '101' }, 1)).toEqual({ kind: 'first' });
      await sleep(1100);
      expect(await shared.markEventSeen(event, 1)).toEqual({ kind: 'first' });
    });

    it('C05: ten concurrent deliveries of one event: one first', async () => {
      const event = { uid: randomBytes(8).toString('hex'), resourceVersion: '7' };
      const results = await Promise.all(Array.from({ length: 10 }, () => shared.markEventSeen(event, 60)));
      // The kinds, sorted, so a failure shows what the other nine answered.
      expect(results.map((result) => result.kind).sort()).toEqual(['first', ...Array(9).fill('seen')]);
    });

    it("a step's own write is marked apart from the seen marker, for 5 minutes", async () => {
      const event = { uid: randomBytes(8).toString('hex'), resourceVersion: '12' };
      expect(await shared.markOwnWrite(event)).toEqual({ kind: 'marked' });
      const key = shared.keys.ownWrite(event.uid, event.resourceVersion);
      expect(await shared.client.ttl(key)).toBeGreaterThan(290);
      expect(await shared.versionMarked(event, 'own')).toEqual({ kind: 'answered', marked: true });
      expect(await shared.versionMarked(event, 'seen')).toEqual({ kind: 'answered', marked: false });
      // Not handled: the first delivery of that version still passes the dedupe.
      expect(await shared.markEventSeen(event, 60)).toEqual({ kind: 'first' });
      expect(await shared.versionMarked(event, 'seen')).toEqual({ kind: 'answered', marked: true });
    });

    it('whether a step of an object runs: its step lock held, then released', async () => {
      const object = {
        kind: 'TerraformMachine',
        namespace: 'ns',
        name: `m-${randomBytes(4).toString('hex')}`,
      };
      expect(await shared.stepLockHeld(object)).toEqual({ kind: 'answered', held: false });
      const taken = await shared.takeStepLock(object);
      expect(taken.kind).toBe('acquired');
      expect(await shared.stepLockHeld(object)).toEqual({ kind: 'answered', held: true });
      if (taken.kind === 'acquired') await shared.releaseStepLock(object, taken.token);
      expect(await shared.stepLockHeld(object)).toEqual({ kind: 'answered', held: false });
    });
  });
});

describe('outages (a dedicated redis-server this file stops and restarts)', () => {
  let workDir: string;
  let server: LocalRedis;
  let port: number;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'captf-redis-adapter-'));
    server = await startRedis({ workDir, name: 'redis-adapter-test' });
    port = server.port;
  });

  afterAll(async () => {
    await server.stop();
    rmSync(workDir, { recursive: true, force: true });
  });

  async function restart(): Promise<void> {
    server = await startRedis({ workDir, port, name: 'redis-adapter-test' });
  }

  it('C16: two callers race for the run lease while Redis restarts in between: exactly one holds it', async () => {
    const first = adapterFor({ url: server.url }, COMMAND_TIMEOUT_MS);
    const second = peerOf(first, { url: server.url }, COMMAND_TIMEOUT_MS);
    await Promise.all([first.waitUntilReady(5000), second.waitUntilReady(5000)]);
    const scope = { object: mA };
    const before = await first.runLeases.take(scope, 'J-first', 'solo', 600);
    if (before.kind !== 'acquired') throw new Error(`expected acquired, got ${before.kind}`);

    await server.stop();
    const during = await Promise.all([
      first.runLeases.take(scope, 'J-first', 'solo', 600),
      second.runLeases.take(scope, 'J-second', 'solo', 600),
    ]);
    // An outage is never "held" and never "acquired".
    expect(during.map((result) => result.kind)).toEqual(['unknown', 'unknown']);

    // No persistence: the restarted Redis has forgotten the first grant.
    await restart();
    await Promise.all([first.waitUntilReady(10_000), second.waitUntilReady(10_000)]);
    const after = await Promise.all([
      first.runLeases.take(scope, 'J-first', 'solo', 600),
      second.runLeases.take(scope, 'J-second', 'solo', 600),
    ]);
    const winners = after.flatMap((result) => (result.kind === 'acquired' ? [result.token] : []));
    expect(winners).toHaveLength(1);
    const [winner] = winners;
    if (!winner) throw new Error('expected a winner');
    const loser = after.find((result) => result.kind !== 'acquired');
    expect(loser).toEqual({ kind: 'held', holder: winner.holder, fence: winner.fence });
    expect(await first.runLeases.read(scope)).toEqual({ kind: 'held', token: winner });
    // Fences stay monotonic across the flush (the counter restarts from the server clock).
    expect(winner.fence).toBeGreaterThan(before.token.fence);
    await Promise.all([first.close(), second.close()]);
  });

  it('Redis stopped: every call answers unknown fast, and everything works again after the restart', async () => {
    const adapter = adapterFor({ url: server.url }, COMMAND_TIMEOUT_MS);
    await adapter.waitUntilReady(5000);
    const step = await adapter.takeStepLock(mA);
    if (step.kind !== 'acquired') throw new Error(`expected acquired, got ${step.kind}`);
    const run = await adapter.runLeases.take({ object: mA }, 'J1', 'solo', 600);
    if (run.kind !== 'acquired') throw new Error(`expected acquired, got ${run.kind}`);
    const claimReceipt = { member: 'TerraformMachine/team-a/m-a', claimScore: 1 };

    await server.stop();
    const started = performance.now();
    const answers = await Promise.all([
      adapter.takeStepLock(mA),
      adapter.extendStepLock(mA, step.token),
      adapter.releaseStepLock(mA, step.token),
      adapter.takeLease('sweep', 'instance-1', 60),
      adapter.runLeases.take({ object: mA }, 'J1', 'solo', 600),
      adapter.runLeases.renew({ object: mA }, run.token, 600),
      adapter.runLeases.release({ object: mA }, run.token),
      adapter.runLeases.read({ object: mA }),
      adapter.jobSlots.take({ namespace: 'team-a', job: 'J1' }, { installation: 10, cluster: 10 }, 600),
      adapter.jobSlots.usage(),
      adapter.schedule.add(claimReceipt.member, 0),
      adapter.schedule.ack(claimReceipt),
      adapter.markEventSeen({ uid: 'u', resourceVersion: '1' }, 60),
      adapter.ping(),
    ]);
    const claim = await adapter.schedule.claimDue(10, 1000);
    const elapsedMs = performance.now() - started;
    expect(answers.map((answer) => answer.kind)).toEqual(answers.map(() => 'unknown'));
    expect(claim.claims).toEqual([]);
    expect(claim.unknown?.kind).toBe('unknown');
    expect(elapsedMs).toBeLessThan(COMMAND_TIMEOUT_MS * 3);

    await restart();
    await adapter.waitUntilReady(10_000);
    expect(await adapter.ping()).toEqual({ kind: 'pong' });
    expect((await adapter.takeStepLock(mA)).kind).toBe('acquired');
    expect((await adapter.runLeases.take({ object: mA }, 'J1', 'solo', 600)).kind).toBe('acquired');
    expect(await adapter.schedule.add(claimReceipt.member, 0)).toMatchObject({ kind: 'scheduled' });
    await adapter.close();
  });
});
