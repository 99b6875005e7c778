import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { readConfig } from '../../../src/config.ts';
import { type LocalRedis, startRedis } from '../../../src/local/redis-server.ts';

// Issue 16 item 5: a password-protected redis-server (`requirepass`, and an ACL user), reached with the
// credentials src/config.ts reads from REDIS_PASSWORD / REDIS_USERNAME, as the handlers and the relay do.

const PASSWORD = 'p4ss-from-a-Secret';
const USER_PASSWORD = 'acl-user-p4ss';
let workDir: string;
let server: LocalRedis;
const adapters: RedisAdapter[] = [];

/** An adapter configured from the environment the handlers would get. */
function adapterFrom(env: Record<string, string>): RedisAdapter {
  const read = readConfig({
    CAPTF_RUNNER_IMAGE: 'r:1',
    CAPTF_AUTH_DISABLED: 'true',
    REDIS_URL: server.url,
    ...env,
  });
  if (!read.ok) throw new Error(read.message);
  const adapter = createRedisAdapter({
    topology: read.config.redis,
    keyPrefix: 'auth-test',
    connectTimeoutMs: 1000,
  });
  adapters.push(adapter);
  return adapter;
}

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'captf-redis-auth-'));
  server = await startRedis({
    workDir,
    name: 'redis-auth-test',
    args: ['--requirepass', PASSWORD, '--user', 'captf', 'on', `>${USER_PASSWORD}`, '~*', '+@all'],
  });
});

afterAll(async () => {
  for (const adapter of adapters) await adapter.close();
  await server?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

describe('Redis with a password', () => {
  it('REDIS_PASSWORD: the default user authenticates; leases work', async () => {
    const redis = adapterFrom({ REDIS_PASSWORD: PASSWORD });
    await redis.waitUntilReady(5000);
    expect(await redis.takeLease('auth', 'holder-1', 30)).toMatchObject({ kind: 'acquired' });
  });

  it('REDIS_USERNAME and REDIS_PASSWORD: an ACL user authenticates', async () => {
    const redis = adapterFrom({ REDIS_USERNAME: 'captf', REDIS_PASSWORD: USER_PASSWORD });
    await redis.waitUntilReady(5000);
    expect(await redis.client.acl('WHOAMI')).toBe('captf');
  });

  it.each<{ id: string; name: string; env: Record<string, string> }>([
    { id: 'none', name: 'without a password', env: {} },
    { id: 'wrong', name: 'with a wrong one', env: { REDIS_PASSWORD: 'wrong' } },
  ])('$id: $name the client never gets ready (the server above answers the right one)', async ({ env }) => {
    const redis = adapterFrom(env);
    await expect(redis.waitUntilReady(1500)).rejects.toThrow();
    expect(redis.client.status).not.toBe('ready');
  });
});
