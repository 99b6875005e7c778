import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import type { ObjectId } from '../../../src/adapters/redis/keys.ts';
import {
  LOCAL_SENTINEL_MASTER,
  type LocalRedisSentinel,
  startRedisSentinel,
} from '../../../src/local/redis-sentinel.ts';

// Sentinel failovers against the Redis adapter's clients, on a Sentinel setup of this file's own (a
// master, a replica, three sentinels on loopback): after a failover, every client works on the new master
// again, whatever it was doing when the failover happened. The failovers during real runs are in
// test/e2e/failover.test.ts; this file makes the races that e2e meets by chance happen every time.

const CLIENTS = 10;
/** Each client its own object, so every take is a write that must succeed. */
const objectOf = (index: number): ObjectId => ({
  kind: 'TerraformMachine',
  namespace: 'team-a',
  name: `m-failover-${index}`,
});

/** Resolves once every adapter has taken and released the step lock (a write on the master), or throws. */
async function allWrite(adapters: RedisAdapter[], timeoutMs: number): Promise<number> {
  const startedAt = Date.now();
  let last: string[] = [];
  while (Date.now() - startedAt < timeoutMs) {
    const answers = await Promise.all(
      adapters.map(async (adapter, index) => {
        const take = await adapter.takeStepLock(objectOf(index));
        if (take.kind !== 'acquired') return `${take.kind} (client ${adapter.client.status})`;
        const release = await adapter.releaseStepLock(objectOf(index), take.token);
        return release.kind === 'released' ? 'ok' : `release ${release.kind}`;
      }),
    );
    if (answers.every((a) => a === 'ok')) return Date.now() - startedAt;
    last = answers;
    await sleep(200);
  }
  throw new Error(`not every client writes after ${timeoutMs} ms: ${JSON.stringify(last)}`);
}

describe('Sentinel failover: every client comes back', () => {
  let workDir: string;
  let sentinel: LocalRedisSentinel;
  let adapters: RedisAdapter[] = [];

  beforeAll(() => {
    workDir = mkdtempSync(join(tmpdir(), 'captf-redis-failover-'));
  });

  afterEach(async () => {
    await Promise.all(adapters.map((adapter) => adapter.close()));
    adapters = [];
    for (const s of sentinel?.sentinels ?? []) process.kill(s.server.process.pid, 'SIGCONT');
    await sentinel?.stop();
  }, 30_000);

  afterAll(() => {
    if (!process.env.CAPTF_KEEP_STACK) rmSync(workDir, { recursive: true, force: true });
  });

  async function start(): Promise<void> {
    sentinel = await startRedisSentinel({ workDir: mkdtempSync(join(workDir, 'run-')) });
    const keyPrefix = `failover-${randomBytes(4).toString('hex')}`;
    adapters = Array.from({ length: CLIENTS }, () =>
      createRedisAdapter({ topology: sentinel.topology, keyPrefix, commandTimeoutMs: 500 }),
    );
    await Promise.all(adapters.map((adapter) => adapter.waitUntilReady(10_000)));
    await allWrite(adapters, 5_000);
  }

  it('a killed master, while a hung sentinel slows the reconnects asking for the master', async () => {
    await start();
    const master = await sentinel.master();
    // The sentinel answers no more but keeps its port open: a reconnect that asks it waits for its command
    // timeout, so the promotion is announced while reconnects are in the middle of asking where the master
    // is (ioredis 6.0.0's failover detector then ended those clients for good).
    const hung = sentinel.sentinels[0];
    if (!hung) throw new Error('no sentinel');
    process.kill(hung.server.process.pid, 'SIGSTOP');
    await master.server.process.kill();
    for (;;) {
      const now = await sentinel.master().catch(() => undefined);
      if (now && now.port !== master.port) break;
      await sleep(100);
    }
    const tookMs = await allWrite(adapters, 20_000);
    process.kill(hung.server.process.pid, 'SIGCONT');
    console.log(
      `[redis-failover] killed master: all ${CLIENTS} clients write ${tookMs} ms after the promotion`,
    );
    expect(adapters.map((adapter) => adapter.client.status)).toEqual(adapters.map(() => 'ready'));
  }, 60_000);

  it('a master demoted while it stays up (SENTINEL FAILOVER): writes move to the promoted replica', async () => {
    await start();
    const master = await sentinel.master();
    const admin = new Redis({ port: sentinel.sentinels[0]?.port, host: '127.0.0.1', lazyConnect: true });
    try {
      await admin.connect();
      await admin.call('SENTINEL', 'FAILOVER', LOCAL_SENTINEL_MASTER);
    } finally {
      admin.disconnect();
    }
    for (;;) {
      const now = await sentinel.master().catch(() => undefined);
      if (now && now.port !== master.port) break;
      await sleep(100);
    }
    // The old master is up and now a replica: a client still on it is answered READONLY.
    const tookMs = await allWrite(adapters, 20_000);
    console.log(
      `[redis-failover] demoted master: all ${CLIENTS} clients write ${tookMs} ms after the switch`,
    );
    expect(adapters.map((adapter) => adapter.client.status)).toEqual(adapters.map(() => 'ready'));
  }, 60_000);
});
