import { describe, expect, it } from 'vitest';
import { type RedisTopology, redisEnvOf } from '../../../src/adapters/redis/topology.ts';
import { readConfig } from '../../../src/config.ts';

const base = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  CAPTF_RUNNER_IMAGE: 'ghcr.io/captf/runner:1',
  CAPTF_AUTH_TOKEN: 'x'.repeat(32),
};

it('defaults follow DESIGN.md: 200 / 20 Job slots, 10 min sync period, in-cluster kube', () => {
  const result = readConfig(base);
  expect(result).toMatchObject({
    ok: true,
    config: {
      maxActiveJobs: 200,
      clusterMaxActiveJobs: 20,
      syncPeriodSeconds: 600,
      kube: { mode: 'in-cluster' },
      auth: { mode: 'bearer' },
      keyPrefix: 'captf',
    },
  });
});

it.each([
  {
    id: 'C-no-token',
    name: 'no token and no explicit opt-out',
    env: { ...base, CAPTF_AUTH_TOKEN: undefined },
    says: 'CAPTF_AUTH_TOKEN: required',
  },
  {
    id: 'C-short-token',
    name: 'a short token',
    env: { ...base, CAPTF_AUTH_TOKEN: 'short' },
    says: 'at least 32',
  },
  {
    id: 'C-redis',
    name: 'a REDIS_URL that is not redis://',
    env: { ...base, REDIS_URL: 'http://x' },
    says: 'REDIS_URL',
  },
  {
    id: 'C-runner',
    name: 'no runner image',
    env: { ...base, CAPTF_RUNNER_IMAGE: undefined },
    says: 'CAPTF_RUNNER_IMAGE',
  },
  {
    id: 'C-flag',
    name: 'an auth flag that is not a boolean word',
    env: { ...base, CAPTF_AUTH_DISABLED: 'maybe' },
    says: 'CAPTF_AUTH_DISABLED',
  },
])('$id rejects $name', ({ env, says }) => {
  const result = readConfig(env);
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.message).toContain(says);
});

it('auth is disabled only by the explicit flag', () => {
  const result = readConfig({
    ...base,
    CAPTF_AUTH_TOKEN: undefined,
    CAPTF_AUTH_DISABLED: 'true',
    KUBECONFIG: '/k',
  });
  expect(result).toMatchObject({
    ok: true,
    config: { auth: { mode: 'disabled' }, kube: { mode: 'kubeconfig', path: '/k' } },
  });
});

describe('Redis topology: one node, a Redis Cluster or Sentinel (issue 12)', () => {
  const { REDIS_URL: _url, ...noRedis } = base;

  it.each([
    {
      name: 'one node',
      env: { REDIS_URL: 'rediss://redis.example:6380/2' },
      redis: { kind: 'single', url: 'rediss://redis.example:6380/2' },
    },
    {
      name: 'a Cluster from its seed nodes (spaces and an IPv6 address allowed)',
      env: { REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-1.redis:7001,[::1]:7002' },
      redis: {
        kind: 'cluster',
        nodes: [
          { host: '10.0.0.1', port: 7000 },
          { host: 'redis-1.redis', port: 7001 },
          { host: '::1', port: 7002 },
        ],
      },
    },
    {
      name: 'Sentinel: the sentinels and the master name',
      env: { REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_MASTER: 'captf' },
      redis: {
        kind: 'sentinel',
        sentinels: [
          { host: 's1', port: 26379 },
          { host: 's2', port: 26379 },
        ],
        masterName: 'captf',
      },
    },
  ])('accepts $name', ({ env, redis }) => {
    expect(readConfig({ ...noRedis, ...env })).toMatchObject({ ok: true, config: { redis } });
  });

  it.each([
    { name: 'no Redis at all', env: {}, says: 'REDIS_URL: set exactly one of REDIS_URL' },
    {
      name: 'two topologies at once',
      env: { REDIS_URL: 'redis://r:6379', REDIS_CLUSTER_NODES: 'r:7000' },
      says: 'REDIS_URL, REDIS_CLUSTER_NODES: set exactly one of',
    },
    {
      name: 'sentinels without the master name',
      env: { REDIS_SENTINELS: 's1:26379' },
      says: 'REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS',
    },
    {
      name: 'a master name without sentinels',
      env: { REDIS_URL: 'redis://r:6379', REDIS_SENTINEL_MASTER: 'captf' },
      says: 'REDIS_SENTINEL_MASTER: only with REDIS_SENTINELS',
    },
    {
      name: 'a seed node without a port',
      env: { REDIS_CLUSTER_NODES: 'r:7000,r2' },
      says: 'REDIS_CLUSTER_NODES: each entry must be host:port',
    },
    {
      name: 'an empty seed list',
      env: { REDIS_CLUSTER_NODES: ' , ' },
      says: 'REDIS_CLUSTER_NODES: at least one',
    },
    { name: 'a port above 65535', env: { REDIS_CLUSTER_NODES: 'r:70000' }, says: 'port above 65535' },
  ])('rejects $name with a clear message', ({ env, says }) => {
    const result = readConfig({ ...noRedis, ...env });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain(says);
  });

  it.each<RedisTopology>([
    { kind: 'single', url: 'redis://127.0.0.1:6379' },
    {
      kind: 'cluster',
      nodes: [
        { host: '127.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
      ],
    },
    { kind: 'sentinel', sentinels: [{ host: 's1', port: 26379 }], masterName: 'captf' },
  ])('the environment a child process gets names the same $kind topology back', (topology) => {
    expect(readConfig({ ...noRedis, ...redisEnvOf(topology) })).toMatchObject({
      ok: true,
      config: { redis: topology },
    });
  });
});
