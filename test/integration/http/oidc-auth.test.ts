import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeAppDeps } from '../../../functions/compose.ts';
import { systemClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter, type KubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { readConfig } from '../../../src/config.ts';
import { buildApp } from '../../../src/http/app.ts';
import { createLogger } from '../../../src/http/logger.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
import { CONTROLLER_USER, controllerAdapter, impersonatedKubeConfig } from '../../env/impersonation.ts';
import { testStack } from '../../env/index.ts';

// Issue 16 item 5: the handlers accept the audience-bound ServiceAccount tokens Knative sources send,
// checked by a TokenReview on the real API server (made as the controller, bound only to the shipped
// ClusterRole), beside the static token. Tokens are minted as Knative would: `kubectl create token`.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const AUDIENCE = 'captf.captf-system';
const SOURCE_SA = 'captf-objects-oidc-sources.knative.dev-apiserversource';
const OTHER_SA = `other-${randomBytes(3).toString('hex')}`;
const STATIC = randomBytes(24).toString('hex');

const kubectl = async (args: string[]) =>
  (await run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args])).stdout.trim();
const mint = (sa: string, audience: string) =>
  kubectl(['-n', 'captf-system', 'create', 'token', sa, '--audience', audience, '--duration', '10m']);

let redis: RedisAdapter;
const apps: FastifyInstance[] = [];

function appWith(kube: KubeAdapter): FastifyInstance {
  const read = readConfig({
    REDIS_URL: testStack().redisUrl,
    CAPTF_RUNNER_IMAGE: 'captf-runner:test',
    CAPTF_AUTH_TOKEN: STATIC,
    CAPTF_AUTH_AUDIENCE: AUDIENCE,
    CAPTF_AUTH_ALLOWED_USERS: `system:serviceaccount:captf-system:${SOURCE_SA}`,
  });
  if (!read.ok) throw new Error(read.message);
  const step: ReconcileStep = async (ref) => ({
    ref,
    action: 'none',
    reason: 'UpToDate',
    requeueAfterSeconds: 600,
  });
  const app = buildApp(
    composeAppDeps({
      config: read.config,
      logger: createLogger('silent'),
      redis,
      kube,
      step,
      clock: systemClock,
    }),
  );
  apps.push(app);
  return app;
}

const tick = (app: FastifyInstance, headers: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url: '/tick',
    headers: { 'content-type': 'application/json', ...headers },
    payload: '{}',
  });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let app: FastifyInstance;

beforeAll(async () => {
  await kubectl([
    'apply',
    '-f',
    join(root, 'infra/namespace.yaml'),
    '-f',
    join(root, 'infra/rbac/controller.yaml'),
  ]);
  for (const sa of [SOURCE_SA, OTHER_SA]) {
    await kubectl(['-n', 'captf-system', 'create', 'serviceaccount', sa]).catch(
      (error: { stderr?: string }) => {
        if (!String(error.stderr).includes('AlreadyExists')) throw error;
      },
    );
  }
  redis = createRedisAdapter({
    url: testStack().redisUrl,
    keyPrefix: `oidc-${randomBytes(3).toString('hex')}`,
  });
  await redis.waitUntilReady(5000);
  app = appWith(controllerAdapter('oidc'));
}, 60_000);

afterAll(async () => {
  for (const each of apps) await each.close();
  await redis?.close();
});

describe('handlers auth on the real API server', () => {
  it("a source ServiceAccount's token for our audience: 200", async () => {
    const response = await tick(app, bearer(await mint(SOURCE_SA, AUDIENCE)));
    expect(response.statusCode, response.body).toBe(200);
  });

  it('the same ServiceAccount with a token for another audience: 401', async () => {
    const response = await tick(app, bearer(await mint(SOURCE_SA, 'https://kubernetes.default.svc')));
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('unauthorized');
  });

  it('another ServiceAccount, right audience: 401 (not an allowed user)', async () => {
    const response = await tick(app, bearer(await mint(OTHER_SA, AUDIENCE)));
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toContain(`captf-system:${OTHER_SA} may not call`);
  });

  it('garbage: 401', async () => {
    const response = await tick(app, bearer('eyJhbGciOiJSUzI1NiJ9.garbage.garbage'));
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toContain('refused the bearer token');
  });

  it('the static token: 200; no token: 401', async () => {
    expect((await tick(app, bearer(STATIC))).statusCode).toBe(200);
    const none = await tick(app, {});
    expect(none.statusCode).toBe(401);
    expect(none.json().error.message).toContain('missing');
  });

  it('the TokenReview cannot be made (API server down): 503 with Retry-After', async () => {
    const down = appWith(
      createKubeAdapter({
        source: { kind: 'loaded', config: impersonatedKubeConfig(CONTROLLER_USER, 'https://127.0.0.1:1') },
        clock: systemClock,
        reporter: { controller: 'captf.io/test', instance: 'oidc-down' },
        requestTimeoutMs: 2000,
      }),
    );
    const response = await tick(down, bearer(await mint(SOURCE_SA, AUDIENCE)));
    expect(response.statusCode, response.body).toBe(503);
    expect(response.headers['retry-after']).toEqual(expect.any(String));
  });
});
