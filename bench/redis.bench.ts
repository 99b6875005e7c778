// The Redis adapter against a real redis-server started here on a free loopback port (DESIGN.md sections 5
// and 8): step lock, run lease, requeue schedule and event dedupe. Latency comes from calls made one after
// another (p50/p99 in microseconds, round trip included); throughput from 32 calls in flight, as a busy
// handler process would make them; "cmd us" and "srv CPU us" are what one operation cost the server by its
// own accounting (bench/lib/redis-server-cost.ts), which a loaded machine moves least. The ratios compare the lease Lua scripts with a plain
// SET NX PX.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedisAdapter, type RedisAdapter } from '../src/adapters/redis/adapter.ts';
import type { ObjectId } from '../src/adapters/redis/keys.ts';
import type { Claim } from '../src/adapters/redis/schedule.ts';
import { startRedis } from '../src/local/redis-server.ts';
import { type LatencySummary, measureConcurrentRate, measureLatency, summarise } from './lib/latency.ts';
import { printMachine } from './lib/machine.ts';
import { type ServerCost, startServerCost } from './lib/redis-server-cost.ts';
import { printRatio, printTable } from './lib/table.ts';

const SEQUENTIAL_CALLS = 2000;
const CONCURRENT_CALLS = 2000;
const IN_FLIGHT = 32;
const SCHEDULE_MEMBERS = 1000;
/** `/tick`'s default batch (CAPTF_TICK_BATCH). */
const CLAIM_BATCH = 50;
const LEASE_TTL_SECONDS = 3600;

interface Row {
  name: string;
  latency: LatencySummary;
  concurrentOpsPerSecond: number;
  /** What one operation cost the server, microseconds. */
  server: ServerCost;
}

function perOperation(cost: ServerCost, operations: number): ServerCost {
  return {
    commandMicros: cost.commandMicros / operations,
    mainThreadCpuMicros: cost.mainThreadCpuMicros / operations,
  };
}

/** Fails the bench when an adapter call did not do what the figure claims to measure. */
function expectKind(answer: { kind: string }, kind: string, what: string): void {
  if (answer.kind !== kind) throw new Error(`redis bench: ${what} answered ${answer.kind}, expected ${kind}`);
}

const machine = (name: string): ObjectId => ({ kind: 'TerraformMachine', namespace: 'bench', name });

/**
 * Measures `op` sequentially and with IN_FLIGHT calls in flight; `series` separates the key spaces of the
 * two runs so neither finds the other's keys.
 */
async function measure(
  redis: RedisAdapter,
  name: string,
  op: (series: string, index: number) => Promise<unknown>,
): Promise<Row> {
  const stop = await startServerCost(redis.client);
  const warmup = Math.min(200, SEQUENTIAL_CALLS);
  const latency = await measureLatency(SEQUENTIAL_CALLS, (i) => op(`${name}-seq`, i), warmup);
  const server = perOperation(await stop(), SEQUENTIAL_CALLS + warmup);
  const concurrentOpsPerSecond = await measureConcurrentRate(CONCURRENT_CALLS, IN_FLIGHT, (i) =>
    op(`${name}-par`, i),
  );
  return { name, latency, concurrentOpsPerSecond, server };
}

async function leaseRows(redis: RedisAdapter): Promise<Row[]> {
  const { client, runLeases } = redis;
  const setNx = await measure(redis, 'SET NX PX (baseline)', async (series, i) => {
    const reply = await client.set(`${redis.keys.prefix}:${series}:${i}`, 'token', 'PX', 30_000, 'NX');
    if (reply !== 'OK') throw new Error('redis bench: SET NX PX did not set a fresh key');
  });
  const setNxDel = await measure(redis, 'SET NX PX + DEL (baseline)', async (series, i) => {
    const key = `${redis.keys.prefix}:${series}:${i}`;
    await client.set(key, 'token', 'PX', 30_000, 'NX');
    await client.del(key);
  });
  const stepTake = await measure(redis, 'step lock take', async (series, i) => {
    expectKind(await redis.takeStepLock(machine(`${series}-${i}`)), 'acquired', 'takeStepLock');
  });
  const stepPair = await measure(redis, 'step lock take + release', async (series, i) => {
    const object = machine(`${series}-${i}`);
    const taken = await redis.takeStepLock(object);
    if (taken.kind !== 'acquired') throw new Error(`redis bench: takeStepLock answered ${taken.kind}`);
    expectKind(await redis.releaseStepLock(object, taken.token), 'released', 'releaseStepLock');
  });
  const runTake = await measure(redis, 'run lease take (solo)', async (series, i) => {
    const scope = { object: machine(`${series}-${i}`) };
    expectKind(await runLeases.take(scope, `job-${i}`, 'solo', LEASE_TTL_SECONDS), 'acquired', 'run take');
  });
  const runPair = await measure(redis, 'run lease take + release (solo)', async (series, i) => {
    const scope = { object: machine(`${series}-${i}`) };
    const taken = await runLeases.take(scope, `job-${i}`, 'solo', LEASE_TTL_SECONDS);
    if (taken.kind !== 'acquired') throw new Error(`redis bench: run take answered ${taken.kind}`);
    expectKind(await runLeases.release(scope, taken.token), 'released', 'run release');
  });
  // A machine's apply in a Cluster API cluster: the script also checks the cluster lease and registers
  // the machine in the cluster's members set (one cluster per 100 machines).
  const memberPair = await measure(redis, 'run lease take + release (member-writer)', async (series, i) => {
    const scope = { object: machine(`${series}-${i}`), clusterName: `${series}-c${Math.floor(i / 100)}` };
    const taken = await runLeases.take(scope, `job-${i}`, 'member-writer', LEASE_TTL_SECONDS);
    if (taken.kind !== 'acquired') throw new Error(`redis bench: member take answered ${taken.kind}`);
    expectKind(await runLeases.release(scope, taken.token), 'released', 'member release');
  });
  const rows = [setNx, setNxDel, stepTake, stepPair, runTake, runPair, memberPair];
  return rows;
}

async function dedupeRows(redis: RedisAdapter): Promise<Row[]> {
  const first = await measure(redis, 'event dedupe, first sight', async (series, i) => {
    const answer = await redis.markEventSeen({ uid: `${series}-${i}`, resourceVersion: '7' }, 3600);
    expectKind(answer, 'first', 'markEventSeen');
  });
  await redis.markEventSeen({ uid: 'replayed', resourceVersion: '7' }, 3600);
  const seen = await measure(redis, 'event dedupe, duplicate', async () => {
    expectKind(await redis.markEventSeen({ uid: 'replayed', resourceVersion: '7' }, 3600), 'seen', 'dedupe');
  });
  return [first, seen];
}

/** Claims every due member in batches of CLAIM_BATCH, timing each claim call. */
async function claimAll(
  redis: RedisAdapter,
  expected: number,
): Promise<{ claims: Claim[]; micros: number[] }> {
  const claims: Claim[] = [];
  const micros: number[] = [];
  while (claims.length < expected) {
    const started = performance.now();
    const batch = await redis.schedule.claimDue(CLAIM_BATCH, 60_000);
    micros.push((performance.now() - started) * 1000);
    if (batch.unknown !== undefined) throw new Error(`redis bench: claimDue: ${batch.unknown.cause.message}`);
    if (batch.claims.length === 0)
      throw new Error(`redis bench: claimDue found ${claims.length} of ${expected}`);
    claims.push(...batch.claims);
  }
  return { claims, micros };
}

async function scheduleRows(redis: RedisAdapter): Promise<Row[]> {
  const member = (round: string, i: number) => `TerraformMachine/bench-${round}/m-${i}`;
  const add = async (round: string, i: number) =>
    expectKind(await redis.schedule.add(member(round, i), 0), 'scheduled', 'schedule add');
  /** Server time per member of what `phase` sends. */
  const serverUsOf = async (phase: () => Promise<unknown>): Promise<ServerCost> => {
    const stop = await startServerCost(redis.client);
    await phase();
    return perOperation(await stop(), SCHEDULE_MEMBERS);
  };
  let addLatency: LatencySummary | undefined;
  const addServerUs = await serverUsOf(async () => {
    addLatency = await measureLatency(SCHEDULE_MEMBERS, (i) => add('seq', i), 0);
  });
  let sequentialClaims: { claims: Claim[]; micros: number[] } = { claims: [], micros: [] };
  const claimServerUs = await serverUsOf(async () => {
    sequentialClaims = await claimAll(redis, SCHEDULE_MEMBERS);
  });
  let ackIndex = 0;
  let ackLatency: LatencySummary | undefined;
  const ackServerUs = await serverUsOf(async () => {
    ackLatency = await measureLatency(
      SCHEDULE_MEMBERS,
      async () => {
        const claim = sequentialClaims.claims[ackIndex];
        ackIndex += 1;
        if (claim === undefined) throw new Error('redis bench: ran out of claims to acknowledge');
        expectKind(await redis.schedule.ack(claim), 'acknowledged', 'schedule ack');
      },
      0,
    );
  });
  if (addLatency === undefined || ackLatency === undefined)
    throw new Error('redis bench: no schedule figures');
  // One round each: the acks must match the claims of exactly the members added.
  const addRate = await measureConcurrentRate(SCHEDULE_MEMBERS, IN_FLIGHT, (i) => add('par', i), 1);
  const claimStarted = performance.now();
  const concurrentClaims = await claimAll(redis, SCHEDULE_MEMBERS);
  const claimMs = performance.now() - claimStarted;
  const ackRate = await measureConcurrentRate(
    SCHEDULE_MEMBERS,
    IN_FLIGHT,
    async (i) => {
      const claim = concurrentClaims.claims[i];
      if (claim === undefined) throw new Error('redis bench: ran out of claims to acknowledge');
      expectKind(await redis.schedule.ack(claim), 'acknowledged', 'schedule ack');
    },
    1,
  );
  const sequentialClaimMs = sequentialClaims.micros.reduce((a, b) => a + b, 0) / 1000;
  const claimCalls = summarise(sequentialClaims.micros, sequentialClaimMs);
  const ackMs = (SCHEDULE_MEMBERS * 1000) / ackLatency.opsPerSecond;
  return [
    {
      name: `schedule add (${SCHEDULE_MEMBERS} members)`,
      latency: addLatency,
      concurrentOpsPerSecond: addRate,
      server: addServerUs,
    },
    // Claims are sequential by design: one /tick claims a batch, then runs its steps.
    {
      name: `schedule claimDue, batch ${CLAIM_BATCH}`,
      latency: claimCalls,
      concurrentOpsPerSecond: Number.NaN,
      server: perOperation(claimServerUs, claimCalls.samples / SCHEDULE_MEMBERS),
    },
    {
      name: `schedule ack (${SCHEDULE_MEMBERS} claims)`,
      latency: ackLatency,
      concurrentOpsPerSecond: ackRate,
      server: ackServerUs,
    },
    {
      name: `schedule claimDue + ack, members/s`,
      latency: {
        samples: SCHEDULE_MEMBERS,
        p50Us: Number.NaN,
        p99Us: Number.NaN,
        opsPerSecond: (SCHEDULE_MEMBERS * 1000) / (sequentialClaimMs + ackMs),
      },
      concurrentOpsPerSecond: (SCHEDULE_MEMBERS * 1000) / (claimMs + (SCHEDULE_MEMBERS * 1000) / ackRate),
      server: {
        commandMicros: claimServerUs.commandMicros + ackServerUs.commandMicros,
        mainThreadCpuMicros: claimServerUs.mainThreadCpuMicros + ackServerUs.mainThreadCpuMicros,
      },
    },
  ];
}

printMachine();
const workDir = mkdtempSync(join(tmpdir(), 'captf-bench-redis-'));
const server = await startRedis({ workDir, name: 'bench-redis' });
const redis = createRedisAdapter({ url: server.url, keyPrefix: `bench-${randomBytes(4).toString('hex')}` });
try {
  await redis.waitUntilReady(5000);
  const leases = await leaseRows(redis);
  const dedupe = await dedupeRows(redis);
  const schedule = await scheduleRows(redis);
  const rows = [...leases, ...dedupe, ...schedule];
  printTable(
    `Redis ${server.url} (real redis-server; latency one call at a time, throughput ${IN_FLIGHT} in flight)`,
    ['operation', 'calls', 'p50 us', 'p99 us', 'cmd us', 'srv CPU us', 'ops/s (1)', `ops/s (${IN_FLIGHT})`],
    rows.map((row) => [
      row.name,
      row.latency.samples,
      row.latency.p50Us,
      row.latency.p99Us,
      row.server.commandMicros,
      row.server.mainThreadCpuMicros,
      row.latency.opsPerSecond,
      row.concurrentOpsPerSecond,
    ]),
    [0, 0, 0, 0, 1, 1, 0, 0],
  );
  process.stdout.write('\n');
  const [setNx, setNxDel, stepTake, stepPair, runTake, runPair, memberPair] = leases;
  if (!setNx || !setNxDel || !stepTake || !stepPair || !runTake || !runPair || !memberPair)
    throw new Error('redis bench: a lease row is missing');
  for (const [name, row, base] of [
    ['step lock take / SET NX PX', stepTake, setNx],
    ['run lease take / SET NX PX', runTake, setNx],
    ['step lock take+release / SET NX PX+DEL', stepPair, setNxDel],
    ['run lease take+release / SET NX PX+DEL', runPair, setNxDel],
    ['member-writer take+release / SET NX PX+DEL', memberPair, setNxDel],
  ] as const) {
    printRatio(
      `${name}, p50`,
      row.latency.p50Us / base.latency.p50Us,
      'latency of one call, round trip included',
    );
    printRatio(
      `${name}, command time`,
      row.server.commandMicros / base.server.commandMicros,
      'execution inside Redis (INFO commandstats)',
    );
    printRatio(
      `${name}, server CPU`,
      row.server.mainThreadCpuMicros / base.server.mainThreadCpuMicros,
      'Redis main-thread CPU per operation, request handling included',
    );
  }
} finally {
  await redis.close();
  await server.stop();
  rmSync(workDir, { recursive: true, force: true });
}
