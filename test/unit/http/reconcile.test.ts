import { expect, it } from 'vitest';
import { auth, T0, testApp } from './in-memory.ts';

it.each([
  { id: 'kind', name: 'TerraformCluster', spelling: 'TerraformCluster' },
  { id: 'lower', name: 'terraformmachine', spelling: 'terraformmachine' },
  { id: 'plural', name: 'terraformmachinepools', spelling: 'terraformmachinepools' },
])('$id spelling $name reaches the step with that kind', async ({ spelling }) => {
  const t = testApp();
  const response = await t.app.inject({
    method: 'POST',
    url: `/reconcile/${spelling}/team-a/obj-1`,
    headers: auth,
  });
  expect(response.statusCode).toBe(200);
  expect(t.calls).toHaveLength(1);
  expect(t.calls[0]?.ref.namespace).toBe('team-a');
  expect(t.calls[0]?.ref.kind.toLowerCase()).toBe(spelling.replace(/s$/, '').toLowerCase());
});

it('answers the StepOutcome as JSON and schedules its requeue', async () => {
  const t = testApp({
    answer: () => ({
      action: 'created',
      reason: 'NoState',
      job: 'captf-c-c1-apply-a1-abc123',
      requeueAfterSeconds: 60,
    }),
  });
  const response = await t.app.inject({
    method: 'POST',
    url: '/reconcile/TerraformCluster/team-a/c1',
    headers: auth,
  });
  expect(response.json()).toEqual({
    dryRun: false,
    outcome: {
      ref: { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' },
      action: 'created',
      reason: 'NoState',
      job: 'captf-c-c1-apply-a1-abc123',
      requeueAfterSeconds: 60,
    },
  });
  expect(t.schedule.dueAt({ kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' })).toBe(T0 + 60_000);
});

it('?dryRun=true passes dryRun to the step and schedules nothing', async () => {
  const t = testApp();
  const response = await t.app.inject({
    method: 'POST',
    url: '/reconcile/TerraformCluster/team-a/c1?dryRun=true',
    headers: auth,
  });
  expect(response.statusCode).toBe(200);
  expect(response.json().dryRun).toBe(true);
  expect(t.calls[0]?.options).toEqual({ dryRun: true });
  expect(t.schedule.due.size).toBe(0);
});

it.each([
  {
    id: 'R01',
    name: 'unknown kind → 404',
    url: '/reconcile/Deployment/team-a/c1',
    status: 404,
    code: 'unknown-object-kind',
  },
  {
    id: 'R02',
    name: 'hostile name → 400',
    url: '/reconcile/TerraformCluster/team-a/..%2Fx',
    status: 400,
    code: 'invalid-request',
  },
  {
    id: 'R03',
    name: 'bad namespace → 400',
    url: '/reconcile/TerraformCluster/Team_A/c1',
    status: 400,
    code: 'invalid-request',
  },
  {
    id: 'R04',
    name: 'dryRun=yes → 400',
    url: '/reconcile/TerraformCluster/team-a/c1?dryRun=yes',
    status: 400,
    code: 'invalid-request',
  },
  {
    id: 'R05',
    name: 'unknown query parameter → 400',
    url: '/reconcile/TerraformCluster/team-a/c1?force=true',
    status: 400,
    code: 'invalid-request',
  },
  {
    id: 'R06',
    name: 'missing name segment → 404 route',
    url: '/reconcile/TerraformCluster/team-a',
    status: 404,
    code: 'route-not-found',
  },
  {
    id: 'R07',
    name: 'GET on a POST route → 404 route',
    url: '/reconcile/TerraformCluster/team-a/c1',
    status: 404,
    code: 'route-not-found',
    method: 'GET' as const,
  },
])('$id $name', async ({ url, status, code, method }) => {
  const t = testApp();
  const response = await t.app.inject({ method: method ?? 'POST', url, headers: auth });
  expect(response.statusCode).toBe(status);
  expect(response.json().error.code).toBe(code);
  expect(t.calls).toEqual([]);
});

it('an object in a namespace CAPTF_WATCH_NAMESPACES leaves out: 404 namespace-not-watched, no step', async () => {
  const t = testApp({ config: { watchNamespaces: ['team-b'] } });
  const response = await t.app.inject({
    method: 'POST',
    url: '/reconcile/TerraformMachine/team-a/m1',
    headers: auth,
  });
  expect(response.statusCode).toBe(404);
  expect(response.json().error.code).toBe('namespace-not-watched');
  expect(response.json().error.message).toContain('namespace team-a is not watched');
  expect(t.calls).toEqual([]);
  const watched = await t.app.inject({
    method: 'POST',
    url: '/reconcile/TerraformMachine/team-b/m1',
    headers: auth,
  });
  expect(watched.statusCode).toBe(200);
  expect(t.calls).toHaveLength(1);
});
