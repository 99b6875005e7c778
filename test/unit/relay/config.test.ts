import { expect, it } from 'vitest';
import { readRelayConfig } from '../../../src/relay/config.ts';

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
