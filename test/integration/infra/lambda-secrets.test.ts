import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  readSecrets,
  requestedParameters,
  secretsChanged,
  withSecrets,
} from '../../../functions/lambda-secrets.ts';
import { freePort } from '../../../src/local/ports.ts';
import { locateMotoServer } from '../../env/moto.ts';

// The Lambda's secrets from SSM Parameter Store (functions/lambda-secrets.ts) against moto's server, a real
// implementation of the SSM API (installed by scripts/lib.sh): SecureString parameters read with decryption
// in one call, a rotation seen as a change, a missing parameter named.

let moto: ChildProcess;
let client: SSMClient;

beforeAll(async () => {
  const port = await freePort();
  moto = spawn(locateMotoServer(), ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  client = new SSMClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'eu-west-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}/moto-api/`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error('moto_server did not answer within 30 s');
    await sleep(200);
  }
}, 60_000);

afterAll(() => {
  moto?.kill('SIGTERM');
});

async function put(name: string, value: string): Promise<void> {
  await client.send(
    new PutParameterCommand({ Name: name, Value: value, Type: 'SecureString', Overwrite: true }),
  );
}

const env = {
  CAPTF_SSM_KUBECONFIG: '/captf/test/kubeconfig',
  CAPTF_SSM_REDIS_PASSWORD: '/captf/test/redis-password',
  CAPTF_SSM_AUTH_TOKEN: '/captf/test/auth-token',
  REDIS_URL: 'redis://redis.example:6379',
};

describe('Lambda secrets from SSM Parameter Store (moto_server)', () => {
  it('S1 reads every named SecureString, decrypted, into the variable the handlers read; the plain names stay out', async () => {
    await put('/captf/test/kubeconfig', 'apiVersion: v1\nkind: Config\n');
    await put('/captf/test/redis-password', 'redis-pass-1');
    await put('/captf/test/auth-token', 'token-1');
    expect([...requestedParameters(env).keys()].sort()).toEqual([
      'CAPTF_AUTH_TOKEN',
      'CAPTF_KUBECONFIG_CONTENT',
      'REDIS_PASSWORD',
    ]);
    const read = await readSecrets(env, client, () => 1000);
    expect(read).toEqual({
      values: {
        CAPTF_KUBECONFIG_CONTENT: 'apiVersion: v1\nkind: Config\n',
        REDIS_PASSWORD: 'redis-pass-1',
        CAPTF_AUTH_TOKEN: 'token-1',
      },
      readAtMs: 1000,
    });
    expect(withSecrets(env, read)).toMatchObject({
      REDIS_URL: 'redis://redis.example:6379',
      REDIS_PASSWORD: 'redis-pass-1',
    });
  });

  it('S2 a rotated value reads as a change; an unchanged read does not', async () => {
    const before = await readSecrets(env, client, Date.now);
    expect(secretsChanged(before, await readSecrets(env, client, Date.now))).toBe(false);
    await put('/captf/test/auth-token', 'token-2');
    const after = await readSecrets(env, client, Date.now);
    expect(after.values.CAPTF_AUTH_TOKEN).toBe('token-2');
    expect(secretsChanged(before, after)).toBe(true);
  });

  it('S3 a parameter SSM does not have is an error that names it; no SSM variable reads nothing', async () => {
    await expect(
      readSecrets({ ...env, CAPTF_SSM_AUTH_TOKEN: '/captf/test/missing' }, client, Date.now),
    ).rejects.toThrow('not found: /captf/test/missing');
    expect((await readSecrets({ REDIS_URL: 'redis://x' }, client, Date.now)).values).toEqual({});
  });
});
