import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { HostPort, RedisTls } from '../adapters/redis/topology.ts';
import { freePort } from './ports.ts';
import { type LocalRedis, type LocalRedisTls, startRedis } from './redis-server.ts';

/**
 * A Redis master with replicas watched by three sentinels on loopback (notes REAL-DRIVERS, "Redis
 * topologies"): Debian's `redis-server`, the sentinels as `redis-server <conf> --sentinel` with quorum 2.
 * No persistence. When the master dies the sentinels promote a replica; the clients ask them where the
 * master is.
 */

/** The name the sentinels monitor the master under. */
export const LOCAL_SENTINEL_MASTER = 'captf';

/** One data node (master or replica). */
export interface LocalSentinelNode {
  name: string;
  port: number;
  server: LocalRedis;
}

/** A running Sentinel setup. */
export interface LocalRedisSentinel {
  topology: { kind: 'sentinel'; sentinels: HostPort[]; masterName: string; tls?: RedisTls };
  nodes: LocalSentinelNode[];
  /** The sentinels (tests stop one to slow the clients' lookups, or ask one for a failover). */
  sentinels: { port: number; server: LocalRedis }[];
  /** The data node the sentinels name as master now. */
  master(): Promise<LocalSentinelNode>;
  stop(): Promise<void>;
}

export interface RedisSentinelOptions {
  workDir: string;
  /** Replicas of the master; default 1. */
  replicas?: number;
  /** `down-after-milliseconds`: silence before a sentinel thinks the master is down. Default 2000. */
  downAfterMs?: number;
  /** `failover-timeout`, ms. Default 10000. */
  failoverTimeoutMs?: number;
  /** TLS only, sentinels and data nodes alike (replication and the sentinels' links too); no plaintext port. */
  tls?: LocalRedisTls;
  log?: (line: string) => void;
}

const SENTINELS = 3;
const QUORUM = 2;

/** One admin command to one sentinel or node, on a short-lived connection (TLS when `ca` is given). */
async function ask<T>(port: number, command: (redis: Redis) => Promise<T>, ca?: string): Promise<T> {
  const redis = new Redis({
    port,
    host: '127.0.0.1',
    ...(ca === undefined ? {} : { tls: { ca } }),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 2000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await command(redis);
  } finally {
    redis.disconnect();
  }
}

/** What one sentinel knows: the master's port, and how many replicas and other sentinels it has seen. */
async function sentinelView(
  port: number,
  ca?: string,
): Promise<{ masterPort: number; replicas: number; sentinels: number } | undefined> {
  return ask(
    port,
    async (redis) => {
      const address = (await redis.call('SENTINEL', 'get-master-addr-by-name', LOCAL_SENTINEL_MASTER)) as
        | [string, string]
        | null;
      const replicas = (await redis.call('SENTINEL', 'replicas', LOCAL_SENTINEL_MASTER)) as unknown[];
      const sentinels = (await redis.call('SENTINEL', 'sentinels', LOCAL_SENTINEL_MASTER)) as unknown[];
      return { masterPort: Number(address?.[1]), replicas: replicas.length, sentinels: sentinels.length };
    },
    ca,
  ).catch(() => undefined);
}

/**
 * Starts a master, `replicas` replicas and three sentinels on free loopback ports, and waits until every
 * sentinel has found the replicas and the other sentinels (before that a failover could not reach quorum).
 * Throws (after stopping what it started) when something does not start or the sentinels do not agree.
 */
export async function startRedisSentinel(options: RedisSentinelOptions): Promise<LocalRedisSentinel> {
  const replicas = options.replicas ?? 1;
  const dir = join(options.workDir, 'redis-sentinel');
  mkdirSync(dir, { recursive: true });
  const nodes: LocalSentinelNode[] = [];
  const sentinels: { port: number; server: LocalRedis }[] = [];
  const tls = options.tls;
  const ca = tls === undefined ? undefined : readFileSync(tls.caPath, 'utf8');
  const stop = async (): Promise<void> => {
    await Promise.all([...sentinels, ...nodes].map((proc) => proc.server.stop()));
  };
  try {
    options.log?.(`starting Redis under Sentinel: a master, ${replicas} replica(s), ${SENTINELS} sentinels`);
    const masterPort = await freePort();
    for (let i = 0; i <= replicas; i += 1) {
      const name = `redis-sentinel-node-${i}`;
      const port = i === 0 ? masterPort : await freePort();
      const nodeDir = join(dir, name);
      mkdirSync(nodeDir, { recursive: true });
      const args = ['--dir', nodeDir, ...(i === 0 ? [] : ['--replicaof', '127.0.0.1', String(masterPort)])];
      const server = await startRedis({
        workDir: options.workDir,
        port,
        name,
        args,
        ...(tls ? { tls } : {}),
      });
      nodes.push({ name, port, server });
    }
    for (let i = 0; i < SENTINELS; i += 1) {
      const port = await freePort();
      // A sentinel rewrites its own configuration file: one writable file each.
      const conf = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        conf,
        [
          // With TLS, startRedis's arguments set `port 0` and the `tls-port`.
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${LOCAL_SENTINEL_MASTER} 127.0.0.1 ${masterPort} ${QUORUM}`,
          `sentinel down-after-milliseconds ${LOCAL_SENTINEL_MASTER} ${options.downAfterMs ?? 2000}`,
          `sentinel failover-timeout ${LOCAL_SENTINEL_MASTER} ${options.failoverTimeoutMs ?? 10_000}`,
          `sentinel parallel-syncs ${LOCAL_SENTINEL_MASTER} 1`,
          '',
        ].join('\n'),
      );
      const server = await startRedis({
        workDir: options.workDir,
        port,
        name: `redis-sentinel-${i}`,
        args: ['--sentinel'],
        config: conf,
        ...(tls === undefined ? {} : { tls }),
      });
      sentinels.push({ port, server });
    }
    const deadline = Date.now() + 30_000;
    for (;;) {
      const views = await Promise.all(sentinels.map((sentinel) => sentinelView(sentinel.port, ca)));
      const agreed = views.every(
        (view) =>
          view !== undefined &&
          view.masterPort === masterPort &&
          view.replicas === replicas &&
          view.sentinels === SENTINELS - 1,
      );
      if (agreed) break;
      if (Date.now() > deadline)
        throw new Error(`Redis Sentinel: sentinels did not find each other (${JSON.stringify(views)})`);
      await sleep(200);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    topology: {
      kind: 'sentinel',
      sentinels: sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port })),
      masterName: LOCAL_SENTINEL_MASTER,
      ...(ca === undefined ? {} : { tls: { ca } }),
    },
    nodes,
    sentinels,
    async master() {
      for (const sentinel of sentinels) {
        const view = await sentinelView(sentinel.port, ca);
        const master = nodes.find((node) => node.port === view?.masterPort);
        if (master) return master;
      }
      throw new Error('Redis Sentinel: no sentinel names a master');
    },
    stop,
  };
}
