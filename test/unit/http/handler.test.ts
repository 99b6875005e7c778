import { expect, it } from 'vitest';
import { fetchHandler } from '../../../functions/handler.ts';
import { binaryHeaders, TOKEN, testApp } from './in-memory.ts';

it('fetch adapter: a Request reaches the same routes, auth and status codes as the server', async () => {
  const t = testApp();
  const handle = fetchHandler(t.app);
  const health = await handle(new Request('http://fn.local/healthz'));
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok' });

  const denied = await handle(
    new Request('http://fn.local/reconcile/TerraformCluster/team-a/c1', { method: 'POST' }),
  );
  expect(denied.status).toBe(401);

  const reconcile = await handle(
    new Request('http://fn.local/reconcile/TerraformCluster/team-a/c1?dryRun=true', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
  );
  expect(reconcile.status).toBe(200);
  expect(((await reconcile.json()) as { dryRun: boolean }).dryRun).toBe(true);
  expect(t.calls).toHaveLength(1);

  const malformed = await handle(
    new Request('http://fn.local/events', {
      method: 'POST',
      headers: binaryHeaders('dev.knative.apiserver.ref.add'),
      body: '{not json',
    }),
  );
  expect(malformed.status).toBe(400);
  expect(malformed.headers.get('x-request-id')).toBeTruthy();
});
