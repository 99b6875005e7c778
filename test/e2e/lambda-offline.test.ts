import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyObjects,
  eventReasons,
  RESOURCE,
  readObject,
  sampleDocuments,
  waitFor,
  waitReady,
} from './harness.ts';
import { type LambdaRun, startLambdaRun } from './lambda-harness.ts';

// The AWS Lambda path end to end (serverless.yml through serverless-offline, test/e2e/lambda-harness.ts):
// the main job's sample goes from nothing to Ready while every event, tick and reconcile call is an
// invocation of the bundled Lambda handler; no other handler runs.

const MINUTE = 60_000;
let run: LambdaRun;

beforeAll(async () => {
  run = await startLambdaRun('sample');
  await applyObjects(run, sampleDocuments(run));
}, 3 * MINUTE);

afterAll(async () => {
  await run?.close();
}, 2 * MINUTE);

/** Lines of serverless-offline's log that record an HTTP request handled by the `api` function. */
function apiRequests(log: string, route: string): number {
  return log.split('\n').filter((line) => line.includes(`${route} (λ: api)`)).length;
}

describe('the Lambda functions of serverless.yml (serverless-offline, DESIGN.md section 15)', () => {
  it(
    'create → Ready with every event, tick and reconcile call going through the Lambda handler',
    async () => {
      const cluster = await waitReady(run, RESOURCE.TerraformCluster, 'demo', 4 * MINUTE);
      const ma = await waitReady(run, RESOURCE.TerraformMachine, 'm-a', 2 * MINUTE);
      const mb = await waitReady(run, RESOURCE.TerraformMachine, 'm-b', 2 * MINUTE);
      expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: '10.20.0.10', port: 6443 });
      expect(ma.spec.providerID).toMatch(/^captf-local:\/\/m-a\//);
      expect(mb.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.20.0.102' }]);
      for (const object of [cluster, ma, mb]) {
        expect(object.status?.lastRun).toMatchObject({ op: 'apply', result: 'succeeded' });
      }
      expect(await eventReasons(run, 'm-a')).toEqual(expect.arrayContaining(['JobCreated', 'JobSucceeded']));

      // The relay's CloudEvents reached the `api` function through the HTTP API.
      expect(apiRequests(run.offlineLog(), 'POST /events')).toBeGreaterThan(0);
      // Every scheduled invocation answered a tick report; a failed one carries Lambda's errorMessage.
      expect(run.ticks.length).toBeGreaterThan(0);
      for (const tick of run.ticks) {
        expect(tick.status, JSON.stringify(tick.body)).toBe(200);
        expect(tick.body).not.toHaveProperty('errorMessage');
        expect(tick.body).toHaveProperty('claimed');
      }

      const reconcile = await fetch(`${run.httpApiUrl}/reconcile/TerraformCluster/${run.namespace}/demo`, {
        method: 'POST',
        headers: { authorization: `Bearer ${run.token}` },
      });
      expect(reconcile.status).toBe(200);
      const answer = (await reconcile.json()) as { dryRun: boolean; outcome: { ref: { name: string } } };
      expect(answer).toMatchObject({ dryRun: false, outcome: { ref: { name: 'demo' } } });
      expect(apiRequests(run.offlineLog(), `POST /reconcile/TerraformCluster/${run.namespace}/demo`)).toBe(1);
    },
    8 * MINUTE,
  );

  it('the HTTP API keeps bearer auth: a reconcile without the token is refused (401) and changes nothing', async () => {
    const before = await readObject(run, RESOURCE.TerraformMachine, 'm-a');
    const refused = await fetch(`${run.httpApiUrl}/reconcile/TerraformMachine/${run.namespace}/m-a`, {
      method: 'POST',
    });
    expect(refused.status).toBe(401);
    const after = await waitFor(
      'm-a read again',
      () => readObject(run, RESOURCE.TerraformMachine, 'm-a'),
      (o) => o !== undefined,
      10_000,
    );
    expect(after?.status?.lastRun?.job).toBe(before?.status?.lastRun?.job);
  });

  it('/metrics asks for the same token on the public HTTP API (CAPTF_METRICS_AUTH in serverless.yml)', async () => {
    expect((await fetch(`${run.httpApiUrl}/metrics`)).status).toBe(401);
    const allowed = await fetch(`${run.httpApiUrl}/metrics`, {
      headers: { authorization: `Bearer ${run.token}` },
    });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('captf_');
  });

  it('secrets come from SSM Parameter Store: a rotated bearer token is read again at its first use; the old one is refused', async () => {
    // Last in this file: the relay keeps the old token, as it would until its Secret is rotated too.
    const rotated = `rotated-${run.token}`;
    await run.rotateSecret('auth-token', rotated);
    const withNew = await fetch(`${run.httpApiUrl}/metrics`, {
      headers: { authorization: `Bearer ${rotated}` },
    });
    expect(withNew.status).toBe(200);
    const withOld = await fetch(`${run.httpApiUrl}/metrics`, {
      headers: { authorization: `Bearer ${run.token}` },
    });
    expect(withOld.status).toBe(401);
  });
});
