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
  'captf_object_paused',
  'captf_schedule_enabled',
  'captf_deletion_timestamp_seconds',
  'captf_drift_detected',
  'captf_object_waiting',
  'captf_active_job_start_timestamp_seconds',
  'captf_active_job_deadline_seconds',
  'captf_plan_pending_timestamp_seconds',
  'captf_state_bytes',
  'captf_run_inputs_bytes',
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
        objects: async () => [
          {
            kind: 'TerraformCluster',
            namespace: 'team-a',
            name: 'c1',
            paused: true,
            deletingSinceSeconds: 1764417000,
            driftDetected: true,
            schedules: { drift: true, refresh: false },
            waitReason: 'WaitingForJobSlot',
            activeJob: { op: 'apply', startedAtSeconds: 1764417100, deadlineSeconds: 3600 },
          },
          {
            kind: 'TerraformMachine',
            namespace: 'team-a',
            name: 'm2',
            paused: false,
            driftDetected: false,
            schedules: { drift: true, refresh: false },
            waitReason: 'AwaitingApproval',
            pendingPlan: { plan: 'captf-m-m2-apply-a2-abcdef-plan', sinceSeconds: 1764417200 },
          },
        ],
        sizes: async () => [
          { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1', what: 'state', bytes: 2048 },
          { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1', what: 'inputs', bytes: 512 },
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
  const c1 = 'kind="TerraformCluster",namespace="team-a",name="c1"';
  for (const line of [
    `captf_object_paused{${c1}} 1`,
    `captf_schedule_enabled{${c1},op="drift"} 1`,
    `captf_schedule_enabled{${c1},op="refresh"} 0`,
    `captf_deletion_timestamp_seconds{${c1}} 1764417000`,
    `captf_drift_detected{${c1}} 1`,
    `captf_object_waiting{${c1},reason="WaitingForJobSlot"} 1`,
    `captf_active_job_start_timestamp_seconds{${c1},op="apply"} 1764417100`,
    `captf_active_job_deadline_seconds{${c1},op="apply"} 3600`,
    `captf_state_bytes{${c1}} 2048`,
    'captf_plan_pending_timestamp_seconds{kind="TerraformMachine",namespace="team-a",name="m2",plan="captf-m-m2-apply-a2-abcdef-plan"} 1764417200',
    `captf_run_inputs_bytes{${c1}} 512`,
    // Zero from the start, so the alerts' `increase` sees the first error.
    'captf_reconcile_steps_total{action="error"} 0',
    'captf_job_errors_total{error_kind="step",step="init"} 0',
    'captf_job_errors_total{error_kind="state-decryption",step="init"} 0',
  ])
    expect(response.body).toContain(line);
});

it('GET /metrics still answers when the fleet store is down, and reports the outage', async () => {
  const errors: unknown[] = [];
  const down = async () => {
    throw new Error('Connection is closed.');
  };
  const t = testApp({
    metrics: createMetrics(
      { jobTotals: down, jobsActive: down, lastSuccesses: down, objects: down, sizes: down },
      (e) => errors.push(e),
    ),
  });
  const response = await t.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  expect(response.body).toContain('# TYPE captf_reconcile_steps_total counter');
  // Once per scrape: every fleet series shares one snapshot read (src/metrics/fleet-snapshot.ts).
  expect(errors).toHaveLength(1);
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
