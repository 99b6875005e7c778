import { expect, it } from 'vitest';
import { readRelayConfig } from '../../../src/relay/config.ts';
import { collectionPath, RELAY_RESOURCES, watchedResources } from '../../../src/relay/resources.ts';

const base = { CAPTF_HANDLER_URL: 'http://127.0.0.1:8080', CAPTF_AUTH_DISABLED: 'true' };

it('the relay reads the same Redis topologies as the handlers (issue 12)', () => {
  expect(readRelayConfig({ ...base, REDIS_CLUSTER_NODES: '127.0.0.1:7000,127.0.0.1:7001' })).toMatchObject({
    ok: true,
    config: {
      redis: {
        kind: 'cluster',
        nodes: [
          { host: '127.0.0.1', port: 7000 },
          { host: '127.0.0.1', port: 7001 },
        ],
      },
    },
  });
  expect(
    readRelayConfig({ ...base, REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_MASTER: 'captf' }),
  ).toMatchObject({ ok: true, config: { redis: { kind: 'sentinel', masterName: 'captf' } } });
});

it('the relay reads Redis TLS as the handlers do, and stops on a CA file it cannot read', () => {
  const tls = { REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_TLS: 'true' };
  expect(readRelayConfig({ ...base, ...tls })).toMatchObject({ ok: true, config: { redis: { tls: {} } } });
  expect(readRelayConfig({ ...base, ...tls, REDIS_TLS_CA_FILE: '/nonexistent/ca.crt' })).toEqual({
    ok: false,
    message: 'read relay config: REDIS_TLS_CA_FILE: /nonexistent/ca.crt: cannot read the CA file (ENOENT)',
  });
});

it('names each invalid variable once', () => {
  const result = readRelayConfig({ ...base, CAPTF_HANDLER_URL: 'ftp://x', REDIS_URL: 'redis://r:6379' });
  expect(result).toEqual({
    ok: false,
    message: 'read relay config: CAPTF_HANDLER_URL: must be an http(s) URL',
  });
  expect(readRelayConfig(base)).toMatchObject({
    ok: false,
    message: expect.stringContaining('REDIS_URL: set exactly one of'),
  });
});

it('the relay watches every namespace by default, or one watch per resource in each watched namespace', () => {
  const all = readRelayConfig({ ...base, REDIS_URL: 'redis://127.0.0.1:6379' });
  if (!all.ok) throw new Error(all.message);
  expect(all.config.watchNamespaces).toEqual([]);
  expect(watchedResources(all.config.watchNamespaces)).toEqual(RELAY_RESOURCES);
  expect(watchedResources([]).map(collectionPath)).toContain('/apis/batch/v1/jobs');

  const some = readRelayConfig({
    ...base,
    REDIS_URL: 'redis://127.0.0.1:6379',
    CAPTF_WATCH_NAMESPACES: 'team-b,team-a',
  });
  if (!some.ok) throw new Error(some.message);
  const resources = watchedResources(some.config.watchNamespaces);
  expect(resources).toHaveLength(2 * RELAY_RESOURCES.length);
  const paths = resources.map(collectionPath);
  expect(paths).toContain('/apis/batch/v1/namespaces/team-a/jobs');
  expect(paths).toContain('/api/v1/namespaces/team-b/pods');
  expect(paths.filter((path) => !path.includes('/namespaces/'))).toEqual([]);
  // The Job and Pod watches keep their label selector in every namespace.
  expect(resources.filter((r) => r.kind === 'Job').map((r) => r.labelSelector)).toEqual([
    'captf.io/managed=true',
    'captf.io/managed=true',
  ]);
  expect(readRelayConfig({ ...base, CAPTF_WATCH_NAMESPACES: 'Team' })).toMatchObject({ ok: false });
});
