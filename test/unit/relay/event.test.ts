import { describe, expect, it } from 'vitest';
import { parseCloudEvent } from '../../../src/http/cloudevent.ts';
import { buildEventMessage } from '../../../src/relay/event.ts';
import { RELAY_RESOURCES, resourcesOf } from '../../../src/relay/resources.ts';
import { DEFAULT_RETRY_POLICY, decideRetry } from '../../../src/relay/retry.ts';

const cluster = RELAY_RESOURCES.find((r) => r.kind === 'TerraformCluster');
if (cluster === undefined) throw new Error('relay resources: table lost a row');

const object = {
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
  kind: 'TerraformCluster',
  metadata: { name: 'c1', namespace: 'team-a', uid: 'u-1', resourceVersion: '42' },
  spec: { source: { image: 'm:1' } },
};
const input = {
  resource: cluster,
  object,
  source: 'https://127.0.0.1:6443',
  id: 'id-1',
  time: new Date('2026-11-29T12:00:00Z'),
};

describe('relay events', () => {
  it('reference mode: binary headers of ApiServerSource and data with only the four reference fields', () => {
    const message = buildEventMessage({ ...input, mode: 'ref', verb: 'update' });
    expect(message.headers).toMatchObject({
      'ce-specversion': '1.0',
      'ce-type': 'dev.knative.apiserver.ref.update',
      'ce-source': 'https://127.0.0.1:6443',
      'ce-subject': '/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/team-a/terraformclusters/c1',
      'ce-kind': 'TerraformCluster',
      'ce-name': 'c1',
      'ce-namespace': 'team-a',
      'content-type': 'application/json',
    });
    expect(JSON.parse(message.body)).toEqual({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'TerraformCluster',
      name: 'c1',
      namespace: 'team-a',
    });
  });

  it.each(['ref', 'resource'] as const)('%s mode: what the relay sends is what /events parses', (mode) => {
    const message = buildEventMessage({ ...input, mode, verb: 'add' });
    const parsed = parseCloudEvent(message.headers, message.body);
    expect(parsed).toMatchObject({
      ok: true,
      subject: { mode, verb: 'add', kind: 'TerraformCluster', name: 'c1', namespace: 'team-a' },
    });
  });

  it('the objects relay watches no Secrets (issue 16: the event source reads none)', () => {
    expect(RELAY_RESOURCES.map((r) => r.kind)).not.toContain('Secret');
    expect(resourcesOf('objects').map((r) => r.kind)).not.toContain('Secret');
  });

  it('the Secrets relay watches only Secrets, and sends them in reference mode whatever its mode', () => {
    expect(resourcesOf('secrets')).toEqual([
      expect.objectContaining({
        kind: 'Secret',
        labelSelector: 'captf.io/variables=true',
        referenceOnly: true,
      }),
      expect.objectContaining({
        kind: 'Secret',
        fieldSelector: 'type=cluster.x-k8s.io/secret',
        referenceOnly: true,
      }),
    ]);
  });
});

describe('relay retry policy', () => {
  const rows = [
    {
      id: '200',
      name: 'delivered',
      attempt: { kind: 'status' as const, status: 200 },
      n: 1,
      retry: false,
      reason: 'Delivered',
    },
    {
      id: '202',
      name: 'deferred is delivered',
      attempt: { kind: 'status' as const, status: 202 },
      n: 1,
      retry: false,
      reason: 'Delivered',
    },
    {
      id: '400',
      name: 'malformed is final',
      attempt: { kind: 'status' as const, status: 400 },
      n: 1,
      retry: false,
      reason: 'Rejected',
    },
    {
      id: '401',
      name: 'unauthorized is final',
      attempt: { kind: 'status' as const, status: 401 },
      n: 1,
      retry: false,
      reason: 'Rejected',
    },
    {
      id: '429',
      name: 'throttled retries',
      attempt: { kind: 'status' as const, status: 429 },
      n: 1,
      retry: true,
      reason: 'Transient',
    },
    {
      id: '503',
      name: 'unavailable retries',
      attempt: { kind: 'status' as const, status: 503 },
      n: 2,
      retry: true,
      reason: 'Transient',
    },
    {
      id: '500',
      name: 'a 5xx retries',
      attempt: { kind: 'status' as const, status: 500 },
      n: 1,
      retry: true,
      reason: 'Transient',
    },
    {
      id: 'transport',
      name: 'connection refused retries',
      attempt: { kind: 'transport' as const },
      n: 1,
      retry: true,
      reason: 'Transient',
    },
    {
      id: 'exhausted',
      name: 'gives up after the last attempt',
      attempt: { kind: 'status' as const, status: 503 },
      n: 8,
      retry: false,
      reason: 'AttemptsExhausted',
    },
  ];
  it.each(rows)('$id $name', ({ attempt, n, retry, reason }) => {
    const decision = decideRetry(attempt, n, DEFAULT_RETRY_POLICY);
    expect(decision.retry).toBe(retry);
    expect(decision.reason).toBe(reason);
  });

  it('backs off exponentially (200, 400, 800 ms …) capped at 10 s, and honours a longer Retry-After', () => {
    const delays = [1, 2, 3, 7].map((n) => {
      const d = decideRetry({ kind: 'transport' }, n, DEFAULT_RETRY_POLICY);
      return d.retry ? d.delayMs : -1;
    });
    expect(delays).toEqual([200, 400, 800, 10_000]);
    const asked = decideRetry({ kind: 'status', status: 429, retryAfterSeconds: 3 }, 1, DEFAULT_RETRY_POLICY);
    expect(asked).toEqual({ retry: true, delayMs: 3000, reason: 'Transient' });
  });
});
