import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { HostPort, RedisTls } from '../adapters/redis/topology.ts';
import { freePort } from './ports.ts';
import { type LocalRedis, type LocalRedisTls, startRedis } from './redis-server.ts';

const run = promisify(execFile);

/**
 * A Redis Cluster on loopback (notes REAL-DRIVERS, "Redis topologies"): masters with one replica each,
 * Debian's `redis-server` in cluster mode, created by `redis-cli --cluster create`. No persistence; the
 * node ids live in each node's `nodes.conf`, so a killed node restarted on its port rejoins as before.
 */

/** One node of the local Cluster. */
export interface LocalClusterNode {
  name: string;
  port: number;
  /** The running server, replaced by `restart`. */
  server: LocalRedis;
}

/** A running local Redis Cluster. */
export interface LocalRedisCluster {
  topology: { kind: 'cluster'; nodes: HostPort[]; tls?: RedisTls };
  nodes: LocalClusterNode[];
  /** The node that serves `key`'s hash slot as master now, as a live node reports it. */
  masterOf(key: string): Promise<LocalClusterNode>;
  /** Starts a node again on its port (after a kill); it rejoins with its own node id. */
  restart(node: LocalClusterNode): Promise<void>;
  /** Resolves once every live node reports `cluster_state:ok`; throws after `timeoutMs`. */
  waitUntilOk(timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  workDir: string;
  /** Masters (each gets one replica); default 3, Redis Cluster's minimum. */
  masters?: number;
  /** `cluster-node-timeout`, ms: how long a master may be silent before its replica takes over. Default 5000. */
  nodeTimeoutMs?: number;
  /** TLS only: the clients' ports, the cluster bus and replication (`tls-cluster`), no plaintext port. */
  tls?: LocalRedisTls;
  log?: (line: string) => void;
}

/** One admin command to one node, on a short-lived connection (TLS when `ca` is given). */
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

/** `cluster_state` of one node, or undefined when it does not answer. */
async function clusterState(port: number, ca?: string): Promise<string | undefined> {
  const info = await ask(port, (redis) => redis.cluster('INFO'), ca).catch(() => undefined);
  return typeof info === 'string' ? /cluster_state:(\w+)/.exec(info)?.[1] : undefined;
}

/** Masters and replicas as the node on `port` sees them (`CLUSTER NODES`), live ones only. */
async function liveRoles(port: number, ca?: string): Promise<{ masters: number; replicas: number }> {
  const nodes = String(await ask(port, (redis) => redis.cluster('NODES'), ca));
  // `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link-state> <slots…>`
  const live = nodes
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => fields[7] === 'connected')
    .map((fields) => (fields[2] ?? '').split(','))
    .filter((flags) => !flags.some((flag) => ['fail', 'fail?', 'handshake', 'noaddr'].includes(flag)));
  return {
    masters: live.filter((flags) => flags.includes('master')).length,
    replicas: live.filter((flags) => flags.includes('slave')).length,
  };
}

/**
 * Starts `masters` masters and as many replicas on free loopback ports (each with its own cluster bus port),
 * creates the Cluster and waits until every node reports `cluster_state:ok` and every replica has joined.
 * Throws (after stopping what it started) when a node does not start or the Cluster does not form.
 */
export async function startRedisCluster(options: RedisClusterOptions): Promise<LocalRedisCluster> {
  const masters = options.masters ?? 3;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 5000;
  const dir = join(options.workDir, 'redis-cluster');
  mkdirSync(dir, { recursive: true });
  const nodes: LocalClusterNode[] = [];
  const argsOf = new Map<string, string[]>();
  const tls = options.tls;
  const ca = tls === undefined ? undefined : readFileSync(tls.caPath, 'utf8');
  const startNode = async (name: string, port: number): Promise<LocalRedis> =>
    startRedis({
      workDir: options.workDir,
      port,
      name,
      args: argsOf.get(name) ?? [],
      ...(tls === undefined ? {} : { tls }),
    });
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.server.stop()));
  };
  try {
    options.log?.(`starting a Redis Cluster: ${masters} masters, ${masters} replicas`);
    for (let i = 0; i < masters * 2; i += 1) {
      const name = `redis-cluster-${i}`;
      const port = await freePort();
      const busPort = await freePort();
      const nodeDir = join(dir, name);
      mkdirSync(nodeDir, { recursive: true });
      argsOf.set(name, [
        '--dir',
        nodeDir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(nodeDir, 'nodes.conf'),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        '--cluster-port',
        String(busPort),
        ...(tls === undefined ? [] : ['--tls-cluster', 'yes']),
      ]);
      nodes.push({ name, port, server: await startNode(name, port) });
    }
    await run(
      'redis-cli',
      [
        ...(tls === undefined ? [] : ['--tls', '--cacert', tls.caPath]),
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
        // It waits for the nodes to meet on their bus, forever if they never do (a refused bus certificate).
      ],
      { timeout: 60_000 },
    ).catch((cause: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(`create Redis Cluster: ${cause.stderr || cause.stdout || cause.message}`, { cause });
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const waitUntilOk = async (timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      const states = await Promise.all(nodes.map((node) => clusterState(node.port, ca)));
      const answering = states.filter((state) => state !== undefined);
      if (answering.length > 0 && answering.every((state) => state === 'ok')) return;
      last = states.map((state, i) => `${nodes[i]?.port}=${state ?? 'down'}`).join(' ');
      await sleep(200);
    }
    throw new Error(`Redis Cluster: not ok after ${timeoutMs} ms (${last})`);
  };
  try {
    await waitUntilOk(30_000);
    const deadline = Date.now() + 30_000;
    // A replica that has not joined yet could not take over: wait until each master has its replica.
    for (;;) {
      const roles = await liveRoles(nodes[0]?.port ?? 0, ca);
      if (roles.masters === masters && roles.replicas === masters) break;
      if (Date.now() > deadline)
        throw new Error(`Redis Cluster: replicas did not join (${JSON.stringify(roles)})`);
      await sleep(200);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    topology: {
      kind: 'cluster',
      nodes: nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
      ...(ca === undefined ? {} : { tls: { ca } }),
    },
    nodes,
    async masterOf(key) {
      for (const node of nodes) {
        const slots = await ask(
          node.port,
          async (redis) => ({
            slot: Number(await redis.cluster('KEYSLOT', key)),
            ranges: await redis.cluster('SLOTS'),
          }),
          ca,
        ).catch(() => undefined);
        if (slots === undefined) continue;
        // Each range: [from, to, [host, port, id] of the master, …its replicas].
        const range = slots.ranges.find(([from, to]) => slots.slot >= from && slots.slot <= to);
        const master = nodes.find((candidate) => candidate.port === range?.[2]?.[1]);
        if (master) return master;
      }
      throw new Error(`Redis Cluster: no live node knows the master of ${key}`);
    },
    async restart(node) {
      node.server = await startNode(node.name, node.port);
    },
    waitUntilOk,
    stop,
  };
}
