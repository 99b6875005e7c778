import { expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/registry.ts';
import { testApp } from './in-memory.ts';

it('GET /healthz answers 200 without touching dependencies', async () => {
  const t = testApp({
    readiness: async () => {
      throw new Error('must not be called');
    },
  });
  const response = await t.app.inject({ method: 'GET', url: '/healthz' });
  expect(response.statusCode).toBe(200);
  expect(response.json()).toEqual({ status: 'ok' });
});

it.each([
  { id: 'ready', name: 'both reachable → 200', redis: true, api: true, status: 200 },
  { id: 'redis-down', name: 'Redis down → 503', redis: false, api: true, status: 503 },
  { id: 'api-down', name: 'API server down → 503', redis: true, api: false, status: 503 },
])('GET /readyz $id: $name', async ({ redis, api, status }) => {
  const t = testApp({
    readiness: async () => ({
      redis: redis ? { ok: true } : { ok: false, message: 'ping: ECONNREFUSED' },
      apiServer: api ? { ok: true } : { ok: false, message: 'GET /readyz: timeout' },
    }),
  });
  const response = await t.app.inject({ method: 'GET', url: '/readyz' });
  expect(response.statusCode).toBe(status);
  expect(response.json().ready).toBe(status === 200);
  if (status === 503) expect(response.headers['retry-after']).toBe('5');
});

const METRIC_NAMES = [
  'captf_jobs_total',
  'captf_job_duration_seconds',
  'captf_job_errors_total',
  'captf_jobs_active',
  'captf_lease_waits_total',
  'captf_lock_force_unlocks_total',
  'captf_last_success_timestamp_seconds',
  'captf_reconcile_steps_total',
  'captf_reconcile_step_duration_seconds',
];

it('GET /metrics exposes every metric of DESIGN.md section 14 with fleet figures from the store', async () => {
  const t = testApp({
    metrics: createMetrics(
      {
        jobTotals: async () => [{ kind: 'TerraformCluster', op: 'apply', result: 'failed', count: 3 }],
        jobsActive: async () => 7,
        lastSuccesses: async () => [
          {
            kind: 'TerraformMachine',
            namespace: 'team-a',
            name: 'm1',
            op: 'drift',
            timestampSeconds: 1764417600,
          },
        ],
      },
      () => undefined,
    ),
  });
  await t.app.inject({
    method: 'POST',
    url: '/reconcile/TerraformCluster/team-a/c1',
    headers: {
      authorization: `Bearer ${t.deps.config.auth.mode === 'bearer' ? t.deps.config.auth.token : ''}`,
    },
  });
  const response = await t.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toContain('text/plain');
  for (const name of METRIC_NAMES) expect(response.body).toContain(`# TYPE ${name} `);
  expect(response.body).toContain('captf_jobs_total{kind="TerraformCluster",op="apply",result="failed"} 3');
  expect(response.body).toContain('captf_jobs_active 7');
  expect(response.body).toContain(
    'captf_last_success_timestamp_seconds{kind="TerraformMachine",namespace="team-a",name="m1",op="drift"} 1764417600',
  );
  expect(response.body).toContain('captf_reconcile_steps_total{action="none"} 1');
});

it('GET /metrics still answers when the fleet store is down, and reports the outage', async () => {
  const errors: unknown[] = [];
  const down = async () => {
    throw new Error('Connection is closed.');
  };
  const t = testApp({
    metrics: createMetrics({ jobTotals: down, jobsActive: down, lastSuccesses: down }, (e) => errors.push(e)),
  });
  const response = await t.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  expect(response.body).toContain('# TYPE captf_reconcile_steps_total counter');
  expect(errors).toHaveLength(3);
});

it('a lease or slot wait counts toward captf_lease_waits_total; other waits do not', async () => {
  const t = testApp({
    answer: (ref) =>
      ref.name === 'slot'
        ? { action: 'waiting', reason: 'WaitingForJobSlot', requeueAfterSeconds: 15 }
        : { action: 'waiting', reason: 'AwaitingApproval', requeueAfterSeconds: 600 },
  });
  const headers = {
    authorization: `Bearer ${t.deps.config.auth.mode === 'bearer' ? t.deps.config.auth.token : ''}`,
  };
  await t.app.inject({ method: 'POST', url: '/reconcile/TerraformCluster/team-a/slot', headers });
  await t.app.inject({ method: 'POST', url: '/reconcile/TerraformCluster/team-a/plan', headers });
  const body = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  expect(body).toContain('captf_lease_waits_total{reason="WaitingForJobSlot"} 1');
  expect(body).not.toContain('reason="AwaitingApproval"');
  expect(body).toContain('captf_reconcile_steps_total{action="waiting"} 2');
});
