import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepAction, StepOutcome } from '../../../src/core/step-outcome.ts';
import { resolveOutcome } from '../../../src/settle/resolve.ts';
import { binaryHeaders, T0, testApp } from './in-memory.ts';

const ref: ObjectRef = { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' };

const rows: Array<{ id: StepAction; name: string; status: number; requeued: boolean }> = [
  { id: 'created', name: 'Job created', status: 200, requeued: true },
  { id: 'bookkept', name: 'finished Jobs recorded', status: 200, requeued: true },
  { id: 'watching', name: 'a Job is running', status: 200, requeued: true },
  { id: 'waiting', name: 'a gate holds the object', status: 200, requeued: true },
  { id: 'finalized', name: 'finalizer removed', status: 200, requeued: true },
  { id: 'none', name: 'up to date', status: 200, requeued: true },
  { id: 'deferred', name: 'step lock held elsewhere', status: 202, requeued: true },
  { id: 'gone', name: 'object does not exist', status: 200, requeued: false },
  { id: 'unavailable', name: 'Redis or API server down', status: 503, requeued: false },
];

describe('resolveOutcome', () => {
  it.each(rows)('$id ($name) → $status', ({ id, status, requeued }) => {
    const outcome: StepOutcome = { ref, action: id, reason: 'UpToDate', requeueAfterSeconds: 30 };
    const resolved = resolveOutcome(outcome, T0);
    expect(resolved.status).toBe(status);
    expect(resolved.requeue === undefined).toBe(!requeued);
    if (requeued) expect(resolved.requeue?.dueAtMs).toBe(T0 + 30_000);
    expect(resolved.log.msg).toContain(`step ${id}: UpToDate`);
    expect(resolved.log.fields).toMatchObject({ kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' });
  });

  it('unavailable never answers 500: 503 with Retry-After, and a claim holder keeps the member due then', () => {
    const resolved = resolveOutcome({ ref, action: 'unavailable', reason: 'Unavailable' }, T0);
    expect(resolved.status).toBe(503);
    expect(resolved.retryAfterSeconds).toBe(5);
    expect(resolved.claimNextDueAtMs).toBe(T0 + 5000);
  });
});

describe('status through the routes', () => {
  it.each(rows)('/reconcile answers $status for action $id', async ({ id, status }) => {
    const t = testApp({ answer: () => ({ action: id, reason: 'UpToDate', requeueAfterSeconds: 30 }) });
    const response = await t.app.inject({
      method: 'POST',
      url: '/reconcile/TerraformCluster/team-a/c1',
      headers: binaryHeaders('x'),
    });
    expect(response.statusCode).toBe(status);
  });

  it('an owner resolver outage (typed UnavailableError) answers 503 with Retry-After, not 500', async () => {
    const { UnavailableError } = await import('../../../src/http/errors.ts');
    const t = testApp({
      owners: {
        resolve: async () => {
          throw new UnavailableError('api-server', 'connect ECONNREFUSED 127.0.0.1:6443');
        },
      },
    });
    const response = await t.app.inject({
      method: 'POST',
      url: '/events',
      headers: binaryHeaders('dev.knative.apiserver.ref.add'),
      payload: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'n' }),
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.json().error.code).toBe('api-server-unavailable');
  });

  it('a dedupe outage answers 503 redis-unavailable', async () => {
    const { UnavailableError } = await import('../../../src/http/errors.ts');
    const t = testApp({
      dedupe: {
        seen: async () => {
          throw new UnavailableError('redis', 'Connection is closed.');
        },
        remember: async () => undefined,
        ownWrite: async () => false,
        stepRunning: async () => false,
      },
    });
    const response = await t.app.inject({
      method: 'POST',
      url: '/events',
      headers: binaryHeaders('dev.knative.apiserver.resource.add'),
      payload: JSON.stringify({
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'TerraformCluster',
        metadata: { name: 'c1', namespace: 'n', uid: 'u', resourceVersion: '1' },
      }),
    });
    expect(response.statusCode).toBe(503);
    expect(response.json().error.code).toBe('redis-unavailable');
    expect(t.calls).toEqual([]);
  });
});
