import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import type { ObjectId } from '../../../src/adapters/redis/keys.ts';
import { readConfig } from '../../../src/config.ts';
import {
  CA_EXTENSIONS,
  type CertificateFiles,
  issueCertificate,
  LOOPBACK_PEER_EXTENSIONS,
} from '../../../src/local/certificates.ts';
import type { ManagedProcess } from '../../../src/local/process.ts';
import { type LocalRedisCluster, startRedisCluster } from '../../../src/local/redis-cluster.ts';
import { type LocalRedisSentinel, startRedisSentinel } from '../../../src/local/redis-sentinel.ts';
import { type LocalRedis, type LocalRedisTls, ping, startRedis } from '../../../src/local/redis-server.ts';

// Redis over TLS as an operator runs it: Debian's redis-server with `--tls-port` and `--port 0` (one node, a
// Cluster with `tls-cluster`, a master and replica under sentinels that speak TLS too), a CA of this file's
// own, and the adapter configured from the environment the handlers get: a rediss:// URL or REDIS_TLS=true,
// and REDIS_TLS_CA_FILE, the file a mounted Secret would hold.

let workDir: string;
let tls: LocalRedisTls;
let otherCa: CertificateFiles;
let single: LocalRedis;
let cluster: LocalRedisCluster;
let sentinel: LocalRedisSentinel;
const adapters: RedisAdapter[] = [];
/**
 * What a refused client's wait says, on every topology: the handshake's own reason. The servers send their
 * CA along with their certificate (OpenSSL completes the chain from `tls-ca-cert-file`), so Node finds a
 * self-signed certificate it does not trust.
 */
const REFUSED_CERTIFICATE =
  /TLS to 127\.0\.0\.1:\d+: self-signed certificate in certificate chain \(SELF_SIGNED_CERT_IN_CHAIN\)/;

/** An adapter configured from the environment the handlers would get, plus the CA setting given. */
function adapterFrom(env: Record<string, string>): RedisAdapter {
  const read = readConfig({ CAPTF_RUNNER_IMAGE: 'r:1', CAPTF_AUTH_DISABLED: 'true', ...env });
  if (!read.ok) throw new Error(read.message);
  const adapter = createRedisAdapter({
    topology: read.config.redis,
    keyPrefix: 'tls-test',
    connectTimeoutMs: 1000,
    commandTimeoutMs: 5000,
  });
  adapters.push(adapter);
  return adapter;
}

const topologies: { name: string; env: () => Record<string, string> }[] = [
  { name: 'one node (rediss://)', env: () => ({ REDIS_URL: single.url }) },
  {
    name: 'a Redis Cluster (REDIS_TLS=true)',
    env: () => ({ REDIS_CLUSTER_NODES: `127.0.0.1:${cluster.nodes[0]?.port}`, REDIS_TLS: 'true' }),
  },
  {
    name: 'Sentinel (REDIS_TLS=true: the sentinels and the master)',
    env: () => ({
      REDIS_SENTINELS: sentinel.topology.sentinels.map((s) => `${s.host}:${s.port}`).join(','),
      REDIS_SENTINEL_MASTER: sentinel.topology.masterName,
      REDIS_TLS: 'true',
    }),
  },
];

/** The TCP ports process `pid` listens on (its sockets' inodes matched against /proc/net/tcp{,6}). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      const target = (() => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          return '';
        }
      })();
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      return inode === undefined ? [] : [inode];
    }),
  );
  return ['/proc/net/tcp', '/proc/net/tcp6']
    .flatMap((table) => readFileSync(table, 'utf8').trim().split('\n').slice(1))
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[3] === '0A' && inodes.has(fields[9] ?? ''))
    .map((fields) => Number.parseInt((fields[1] ?? '').split(':')[1] ?? '', 16))
    .sort((a, b) => a - b);
}

/** Whether a TLS handshake with the test CA succeeds on `port`. */
function handshakes(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', ca: readFileSync(tls.caPath) });
    socket.setTimeout(2000);
    socket.on('secureConnect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(false));
  });
}

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'captf-redis-tls-'));
  const ca = issueCertificate({
    dir: workDir,
    name: 'ca',
    subject: '/CN=captf redis test CA',
    extensions: CA_EXTENSIONS,
  });
  const server = issueCertificate({
    dir: workDir,
    name: 'redis',
    subject: '/CN=127.0.0.1',
    extensions: LOOPBACK_PEER_EXTENSIONS,
    issuer: ca,
  });
  otherCa = issueCertificate({
    dir: workDir,
    name: 'other-ca',
    subject: '/CN=another CA',
    extensions: CA_EXTENSIONS,
  });
  tls = { certPath: server.certPath, keyPath: server.keyPath, caPath: ca.certPath };
  // One after the other: each picks free ports, and starting them at once could pick the same one twice.
  single = await startRedis({ workDir, name: 'redis-tls-single', tls });
  cluster = await startRedisCluster({ workDir, tls });
  sentinel = await startRedisSentinel({ workDir, tls });
});

afterAll(async () => {
  for (const adapter of adapters) await adapter.close();
  await Promise.all([single?.stop(), cluster?.stop(), sentinel?.stop()]);
  rmSync(workDir, { recursive: true, force: true });
});

describe.each(topologies)('TLS to $name', ({ env }) => {
  it('the adapter trusts the CA of REDIS_TLS_CA_FILE: leases and scripts work on every master', async () => {
    const redis = adapterFrom({ ...env(), REDIS_TLS_CA_FILE: tls.caPath });
    await redis.waitUntilReady(10_000);
    expect(await redis.ping()).toEqual({ kind: 'pong' });
    expect(await redis.takeLease('tls', 'holder-1', 30)).toMatchObject({ kind: 'acquired' });
    // Twelve objects spread over the hash slots: on the Cluster, every master answers a script over TLS.
    const objects: ObjectId[] = Array.from({ length: 12 }, (_, i) => ({
      kind: 'TerraformMachine',
      namespace: 'team-tls',
      name: `m-${i}`,
    }));
    // One after the other: a Cluster client opens a master's connection at the first command for it, and
    // a command sent while it opens fails at once (no offline queue, DESIGN.md section 13).
    const takes = [];
    for (const object of objects) takes.push(await redis.takeStepLock(object));
    expect(takes.map((take) => take.kind)).toEqual(Array(12).fill('acquired'));
    // Sentinel hands out the master, not the replica.
    expect(await redis.client.info('replication')).toMatch(/role:master/);
  });

  it('a client trusting another CA is refused, and says why: the certificate', async () => {
    const redis = adapterFrom({ ...env(), REDIS_TLS_CA_FILE: otherCa.certPath });
    await expect(redis.waitUntilReady(3000)).rejects.toThrow(REFUSED_CERTIFICATE);
    expect(redis.client.status).not.toBe('ready');
  });

  it('without a CA setting the public roots do not trust a private CA: refused', async () => {
    const redis = adapterFrom(env());
    await expect(redis.waitUntilReady(3000)).rejects.toThrow(REFUSED_CERTIFICATE);
  });
});

describe('no plaintext port', () => {
  it('every server listens only on ports that speak TLS; a plaintext PING is not answered', async () => {
    const servers: { name: string; port: number; process: ManagedProcess }[] = [
      { name: 'single', port: single.port, process: single.process },
      ...cluster.nodes.map((node) => ({ name: node.name, port: node.port, process: node.server.process })),
      ...sentinel.nodes.map((node) => ({ name: node.name, port: node.port, process: node.server.process })),
      ...sentinel.sentinels.map((s, i) => ({
        name: `sentinel-${i}`,
        port: s.port,
        process: s.server.process,
      })),
    ];
    expect(servers).toHaveLength(1 + 6 + 2 + 3);
    for (const server of servers) {
      const ports = listeningPorts(server.process.pid);
      // Its client port, and a Cluster node's bus port (TLS as well, `tls-cluster yes`).
      expect(ports, server.name).toContain(server.port);
      expect(ports.length, server.name).toBe(server.name.startsWith('redis-cluster-') ? 2 : 1);
      for (const port of ports) expect(await handshakes(port), `${server.name}:${port}`).toBe(true);
      expect(await ping(server.port), `${server.name}: plaintext PING`).toBe(false);
    }
  });
});
