import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
      kube: { kind: 'in-cluster' },
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
    config: { auth: { mode: 'disabled' }, kube: { kind: 'file', path: '/k' } },
  });
});

it("a kubeconfig's content is loaded from memory and wins over a path; empty reads as unset", () => {
  const content = 'apiVersion: v1\nkind: Config\n';
  expect(readConfig({ ...base, CAPTF_KUBECONFIG_CONTENT: content, KUBECONFIG: '/k' })).toMatchObject({
    ok: true,
    config: { kube: { kind: 'content', content } },
  });
  expect(readConfig({ ...base, CAPTF_KUBECONFIG_CONTENT: '', KUBECONFIG: '/k' })).toMatchObject({
    ok: true,
    config: { kube: { kind: 'file', path: '/k' } },
  });
  expect(readConfig({ ...base, CAPTF_KUBECONFIG_CONTENT: undefined, KUBECONFIG: undefined })).toMatchObject({
    ok: true,
    config: { kube: { kind: 'in-cluster' } },
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
    {
      kind: 'cluster',
      nodes: [{ host: 'r', port: 7000 }],
      credentials: { username: 'captf', password: 'p@ss:word' },
    },
  ])('the environment a child process gets names the same $kind topology back', (topology) => {
    expect(readConfig({ ...noRedis, ...redisEnvOf(topology) })).toEqual({
      ok: true,
      config: expect.objectContaining({ redis: topology }),
    });
  });
});

describe('Redis AUTH (issue 16): REDIS_PASSWORD and REDIS_USERNAME for every topology', () => {
  const { REDIS_URL: _url, ...noRedis } = base;
  const password = 's3cret-from-a-Secret';

  it.each([
    { name: 'one node', env: { REDIS_URL: 'redis://r:6379' }, kind: 'single' },
    { name: 'a Cluster', env: { REDIS_CLUSTER_NODES: 'r:7000' }, kind: 'cluster' },
    {
      name: 'Sentinel (the master and its replicas)',
      env: { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_MASTER: 'captf' },
      kind: 'sentinel',
    },
  ])('$name: the password reaches the topology; no username is the default user', ({ env, kind }) => {
    const result = readConfig({ ...noRedis, ...env, REDIS_PASSWORD: password });
    expect(result).toMatchObject({ ok: true, config: { redis: { kind, credentials: { password } } } });
    if (result.ok) expect(result.config.redis.credentials).toEqual({ password });
  });

  it('an ACL user comes with its password', () => {
    const result = readConfig({ ...base, REDIS_USERNAME: 'captf', REDIS_PASSWORD: password });
    expect(result).toMatchObject({
      ok: true,
      config: { redis: { credentials: { username: 'captf', password } } },
    });
  });

  it('without REDIS_PASSWORD there is no AUTH (a password in the URL stays in the URL)', () => {
    const result = readConfig({ ...noRedis, REDIS_URL: 'redis://:inurl@r:6379' });
    expect(result).toMatchObject({ ok: true, config: { redis: { url: 'redis://:inurl@r:6379' } } });
    if (result.ok) expect(result.config.redis.credentials).toBeUndefined();
  });

  it.each([
    {
      name: 'a username without a password',
      env: { REDIS_USERNAME: 'captf' },
      says: 'REDIS_USERNAME: only with',
    },
    { name: 'an empty password', env: { REDIS_PASSWORD: '' }, says: 'REDIS_PASSWORD: empty' },
    {
      name: 'a password both in the URL and in REDIS_PASSWORD',
      env: { REDIS_URL: 'redis://:a@r:6379', REDIS_PASSWORD: 'b' },
      says: 'REDIS_PASSWORD: the REDIS_URL carries credentials already',
    },
  ])('rejects $name', ({ env, says }) => {
    const result = readConfig({ ...base, ...env });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toContain(says);
      expect(result.message).not.toContain(password);
    }
  });
});

describe('handlers auth (issue 16): static token, audience-bound tokens, or both', () => {
  const audience = 'captf.captf-system';

  it('an audience alone turns bearer auth on without a static token', () => {
    const result = readConfig({ ...base, CAPTF_AUTH_TOKEN: undefined, CAPTF_AUTH_AUDIENCE: audience });
    expect(result).toMatchObject({ ok: true, config: { auth: { mode: 'bearer', oidc: { audience } } } });
    if (result.ok && result.config.auth.mode === 'bearer') expect(result.config.auth.token).toBeUndefined();
  });

  it('allowed users are a comma-separated list of user names', () => {
    const result = readConfig({
      ...base,
      CAPTF_AUTH_AUDIENCE: audience,
      CAPTF_AUTH_ALLOWED_USERS: 'system:serviceaccount:a:b , system:serviceaccount:a:c',
    });
    expect(result).toMatchObject({
      ok: true,
      config: {
        auth: {
          mode: 'bearer',
          token: 'x'.repeat(32),
          oidc: { audience, allowedUsers: ['system:serviceaccount:a:b', 'system:serviceaccount:a:c'] },
        },
      },
    });
  });

  it.each([
    {
      name: 'allowed users without an audience',
      env: { CAPTF_AUTH_ALLOWED_USERS: 'system:serviceaccount:a:b' },
      says: 'CAPTF_AUTH_ALLOWED_USERS: only with CAPTF_AUTH_AUDIENCE',
    },
    { name: 'an empty audience', env: { CAPTF_AUTH_AUDIENCE: '' }, says: 'CAPTF_AUTH_AUDIENCE: empty' },
    {
      name: 'an empty list of users',
      env: { CAPTF_AUTH_AUDIENCE: audience, CAPTF_AUTH_ALLOWED_USERS: ' , ' },
      says: 'CAPTF_AUTH_ALLOWED_USERS: at least one',
    },
  ])('rejects $name', ({ env, says }) => {
    const result = readConfig({ ...base, ...env });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain(says);
  });

  it('the explicit opt-out wins over an audience (the local Knative adapters send no token)', () => {
    const result = readConfig({ ...base, CAPTF_AUTH_DISABLED: 'true', CAPTF_AUTH_AUDIENCE: audience });
    expect(result).toMatchObject({ ok: true, config: { auth: { mode: 'disabled' } } });
  });
});

describe('CAPTF_WATCH_NAMESPACES', () => {
  it.each([
    { name: 'absent', value: undefined, want: [] },
    { name: 'empty (serverless.yml default)', value: '', want: [] },
    { name: 'one', value: 'team-a', want: ['team-a'] },
    { name: 'several, spaced, repeated', value: ' team-b, team-a,,team-b ', want: ['team-a', 'team-b'] },
  ])('$name: $want', ({ value, want }) => {
    expect(readConfig({ ...base, CAPTF_WATCH_NAMESPACES: value })).toMatchObject({
      ok: true,
      config: { watchNamespaces: want },
    });
  });

  it.each(['Team-A', 'team_a', 'a'.repeat(64), '-team'])(
    '%s is no namespace name: a clear error',
    (value) => {
      expect(readConfig({ ...base, CAPTF_WATCH_NAMESPACES: `ok,${value}` })).toEqual({
        ok: false,
        message: expect.stringContaining(
          'CAPTF_WATCH_NAMESPACES: each entry must be a namespace name (DNS-1123 label)',
        ),
      });
    },
  );
});

describe('CAPTF_STATE_ENCRYPTION_SECRET and _FALLBACK: the default state encryption (issue 25 item 3)', () => {
  it('none by default; a secret/key, with a rotation fallback or unencrypted', () => {
    const none = readConfig(base);
    expect(none.ok && none.config.stateEncryption).toBe(undefined);
    expect(
      readConfig({
        ...base,
        CAPTF_STATE_ENCRYPTION_SECRET: 'site-key/v2',
        CAPTF_STATE_ENCRYPTION_FALLBACK: 'site-key/v1',
      }),
    ).toMatchObject({
      ok: true,
      config: {
        stateEncryption: {
          passphraseSecretRef: { name: 'site-key', key: 'v2' },
          fallback: { passphraseSecretRef: { name: 'site-key', key: 'v1' } },
        },
      },
    });
  });

  it("empty values are unset (serverless.yml passes its parameters' empty defaults)", () => {
    const result = readConfig({
      ...base,
      CAPTF_STATE_ENCRYPTION_SECRET: '',
      CAPTF_STATE_ENCRYPTION_FALLBACK: '',
    });
    expect(result.ok && result.config.stateEncryption).toBe(undefined);
  });

  it('a malformed setting or a lone fallback stops the start, naming the variable', () => {
    expect(readConfig({ ...base, CAPTF_STATE_ENCRYPTION_SECRET: 'site-key' })).toEqual({
      ok: false,
      message: expect.stringContaining('CAPTF_STATE_ENCRYPTION_SECRET: <secret name>/<key>'),
    });
    expect(readConfig({ ...base, CAPTF_STATE_ENCRYPTION_FALLBACK: 'unencrypted' })).toEqual({
      ok: false,
      message: expect.stringContaining(
        'CAPTF_STATE_ENCRYPTION_FALLBACK: only with CAPTF_STATE_ENCRYPTION_SECRET',
      ),
    });
  });
});

describe('Redis TLS: rediss:// or REDIS_TLS=true, the CA from REDIS_TLS_CA_FILE or REDIS_TLS_CA_DATA', () => {
  const { REDIS_URL: _url, ...noRedis } = base;
  const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'redis-tls');
  const caFile = join(fixtures, 'ca.crt');
  const caPem = readFileSync(caFile, 'utf8');
  const caData = Buffer.from(caPem).toString('base64');
  const cluster = { REDIS_CLUSTER_NODES: 'r1:6379,r2:6379' };
  const sentinel = { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_MASTER: 'captf' };

  it.each([
    {
      id: 'T1',
      name: 'a rediss:// URL is TLS; without a CA setting, Node trusts its public roots',
      env: { REDIS_URL: 'rediss://r:6380' },
      tls: {},
    },
    {
      id: 'T2',
      name: 'a rediss:// URL with the CA file of a mounted Secret',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: caFile },
      tls: { ca: caPem },
    },
    {
      id: 'T3',
      name: 'a Cluster with REDIS_TLS=true and the CA as base64 (Lambda)',
      env: { ...cluster, REDIS_TLS: 'true', REDIS_TLS_CA_DATA: caData },
      tls: { ca: caPem },
    },
    {
      id: 'T4',
      name: 'Sentinel with REDIS_TLS=yes and the CA file',
      env: { ...sentinel, REDIS_TLS: 'yes', REDIS_TLS_CA_FILE: caFile },
      tls: { ca: caPem },
    },
    {
      id: 'T5',
      name: 'REDIS_TLS=true beside a rediss:// URL says the same thing',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS: 'true' },
      tls: {},
    },
  ])('$id: $name', ({ env, tls }) => {
    const result = readConfig({ ...noRedis, ...env });
    if (!result.ok) throw new Error(result.message);
    expect(result.config.redis.tls).toEqual(tls);
  });

  it.each([
    { name: 'a redis:// URL', env: { REDIS_URL: 'redis://r:6379' } },
    { name: 'a Cluster without REDIS_TLS', env: cluster },
    { name: 'Sentinel with REDIS_TLS=false', env: { ...sentinel, REDIS_TLS: 'false' } },
    {
      name: 'empty TLS settings (a template default)',
      env: { ...cluster, REDIS_TLS: '', REDIS_TLS_CA_FILE: '', REDIS_TLS_CA_DATA: '' },
    },
  ])('plaintext: $name', ({ env }) => {
    const result = readConfig({ ...noRedis, ...env });
    if (!result.ok) throw new Error(result.message);
    expect(result.config.redis.tls).toBeUndefined();
  });

  it.each([
    {
      id: 'E1',
      name: 'a CA file that is not there',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: '/nonexistent/ca.crt' },
      says: 'REDIS_TLS_CA_FILE: /nonexistent/ca.crt: cannot read the CA file (ENOENT)',
    },
    {
      id: 'E2',
      name: 'a CA file that cannot be read (a directory: the Secret mount, not its key)',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: fixtures },
      says: `REDIS_TLS_CA_FILE: ${fixtures}: cannot read the CA file (EISDIR)`,
    },
    {
      id: 'E3',
      name: 'a CA file without a PEM certificate',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: join(import.meta.dirname, 'config.test.ts') },
      says: 'no PEM certificate (-----BEGIN CERTIFICATE-----) in it',
    },
    {
      id: 'E4',
      name: 'a CA file whose certificate does not parse',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS_CA_FILE: join(fixtures, 'corrupt.crt') },
      says: `REDIS_TLS_CA_FILE: ${join(fixtures, 'corrupt.crt')}: certificate 1 does not parse`,
    },
    {
      id: 'E5',
      name: 'CA data that is not base64',
      env: { ...cluster, REDIS_TLS: 'true', REDIS_TLS_CA_DATA: caPem },
      says: 'REDIS_TLS_CA_DATA: not base64 (of the PEM file: base64 -w0 ca.crt)',
    },
    {
      id: 'E6',
      name: 'a CA for a plaintext URL (it would be ignored)',
      env: { REDIS_URL: 'redis://r:6379', REDIS_TLS_CA_FILE: caFile },
      says: 'REDIS_TLS_CA_FILE: only with TLS (a rediss:// REDIS_URL, or REDIS_TLS=true for a Cluster or Sentinel)',
    },
    {
      id: 'E7',
      name: 'a CA for a Cluster without REDIS_TLS',
      env: { ...cluster, REDIS_TLS_CA_DATA: caData },
      says: 'REDIS_TLS_CA_DATA: only with TLS',
    },
    {
      id: 'E8',
      name: 'REDIS_TLS=true with a redis:// URL',
      env: { REDIS_URL: 'redis://r:6379', REDIS_TLS: 'true' },
      says: "REDIS_TLS: true but the REDIS_URL is redis://; one node's TLS is its URL's scheme (rediss://)",
    },
    {
      id: 'E9',
      name: 'REDIS_TLS=false with a rediss:// URL',
      env: { REDIS_URL: 'rediss://r:6380', REDIS_TLS: 'false' },
      says: 'REDIS_TLS: false but the REDIS_URL is rediss://',
    },
    {
      id: 'E10',
      name: 'both CA settings',
      env: { ...cluster, REDIS_TLS: 'true', REDIS_TLS_CA_FILE: caFile, REDIS_TLS_CA_DATA: caData },
      says: 'REDIS_TLS_CA_FILE, REDIS_TLS_CA_DATA: set one of them',
    },
    {
      id: 'E11',
      name: 'a REDIS_TLS that is no boolean word',
      env: { ...cluster, REDIS_TLS: 'on' },
      says: 'REDIS_TLS: true or false',
    },
  ])('$id: rejects $name, naming the setting', ({ env, says }) => {
    const result = readConfig({ ...noRedis, ...env });
    expect(result).toEqual({ ok: false, message: expect.stringContaining(says) });
  });

  it.each<RedisTopology>([
    { kind: 'single', url: 'rediss://127.0.0.1:6380', tls: { ca: caPem } },
    { kind: 'cluster', nodes: [{ host: 'r', port: 7000 }], tls: {} },
    {
      kind: 'sentinel',
      sentinels: [{ host: 's1', port: 26379 }],
      masterName: 'captf',
      credentials: { password: 'p' },
      tls: { ca: caPem },
    },
  ])('a child process gets the same TLS $kind topology back (the CA as REDIS_TLS_CA_DATA)', (topology) => {
    expect(readConfig({ ...noRedis, ...redisEnvOf(topology) })).toEqual({
      ok: true,
      config: expect.objectContaining({ redis: topology }),
    });
  });
});
