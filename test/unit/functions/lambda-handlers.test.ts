import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
  ScheduledEvent,
} from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { lambdaHandlersOf } from '../../../functions/lambda-handlers.ts';
import { requireLambdaKubeconfig } from '../../../functions/lambda-kubeconfig.ts';
import { UnavailableError } from '../../../src/http/errors.ts';
import { auth, binaryHeaders, T0, TOKEN, testApp } from '../http/in-memory.ts';

// The Lambda functions over the app (functions/lambda-handlers.ts): an HTTP API request reaches the same
// routes, auth and status codes as the server; a Scheduled Event runs one tick with the configured token.

const context = { awsRequestId: 'req-1', functionName: 'captf-test-api' } as Context;

/** An HTTP API (payload format 2.0) request, as API Gateway hands it to the function. */
function httpApiEvent(method: string, path: string, headers: Record<string, string>, body?: string) {
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: '000000000000',
      apiId: 'api',
      domainName: 'api.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'relay' },
      requestId: 'r1',
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: '29/Nov/2026:12:00:00 +0000',
      timeEpoch: T0,
    },
    isBase64Encoded: false,
    ...(body === undefined ? {} : { body }),
  } as APIGatewayProxyEventV2;
}

const scheduledEvent = {
  version: '0',
  id: 'schedule-event-1',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '000000000000',
  time: '2026-11-29T12:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:events:eu-west-1:000000000000:rule/captf-tick'],
  detail: {},
} as ScheduledEvent;

async function callApi(
  api: ReturnType<typeof lambdaHandlersOf>['api'],
  event: APIGatewayProxyEventV2,
): Promise<APIGatewayProxyStructuredResultV2> {
  return (await api(event, context)) as APIGatewayProxyStructuredResultV2;
}

describe('the api function (HTTP API → the app)', () => {
  it('routes, auth and status codes are the server’s: health 200, reconcile 401 without token, 200 with', async () => {
    const t = testApp();
    const { api } = lambdaHandlersOf(t.app, { mode: 'bearer', token: TOKEN });
    const health = await callApi(api, httpApiEvent('GET', '/healthz', {}));
    expect(health.statusCode).toBe(200);
    expect(JSON.parse(health.body ?? '')).toEqual({ status: 'ok' });

    const denied = await callApi(api, httpApiEvent('POST', '/reconcile/TerraformCluster/team-a/c1', {}));
    expect(denied.statusCode).toBe(401);
    expect(t.calls).toHaveLength(0);

    const reconcile = await callApi(api, httpApiEvent('POST', '/reconcile/TerraformCluster/team-a/c1', auth));
    expect(reconcile.statusCode).toBe(200);
    expect(t.calls.map((call) => call.ref)).toEqual([
      { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' },
    ]);
  });

  it('a relay CloudEvent reaches /events and runs one step; a malformed one is a 400 that runs none', async () => {
    const t = testApp();
    const { api } = lambdaHandlersOf(t.app, { mode: 'bearer', token: TOKEN });
    const ref = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'TerraformMachine',
      name: 'm1',
      namespace: 'team-a',
    };
    const event = httpApiEvent(
      'POST',
      '/events',
      binaryHeaders('dev.knative.apiserver.ref.update'),
      JSON.stringify(ref),
    );
    const answered = await callApi(api, event);
    expect(answered.statusCode).toBe(200);
    expect(t.calls.map((call) => call.ref.name)).toEqual(['m1']);

    const malformed = httpApiEvent(
      'POST',
      '/events',
      binaryHeaders('dev.knative.apiserver.ref.update'),
      '{"kind":',
    );
    expect((await callApi(api, malformed)).statusCode).toBe(400);
    expect(t.calls).toHaveLength(1);
  });
});

describe('the tick function (EventBridge schedule → POST /tick)', () => {
  it('runs the due requeues with the configured token and returns the tick report', async () => {
    const t = testApp();
    const due = { kind: 'TerraformCluster', namespace: 'team-a', name: 'c1' } as const;
    await t.schedule.add(due, T0 - 1000);
    const { tick } = lambdaHandlersOf(t.app, { mode: 'bearer', token: TOKEN });
    const report = await tick(scheduledEvent, context);
    expect(report).toMatchObject({ claimed: 1, completed: 1, failed: 0 });
    expect(t.calls.map((call) => call.ref)).toEqual([due]);
    expect(t.sweeps).toEqual([T0]);
  });

  it('an unanswerable tick (Redis down: 503) fails the invocation, so Lambda records the error', async () => {
    const t = testApp({
      schedule: {
        add: async () => undefined,
        ensure: async () => undefined,
        claimDue: async () => {
          throw new UnavailableError('redis', 'claim requeues: connection refused');
        },
        complete: async () => undefined,
      },
    });
    const { tick } = lambdaHandlersOf(t.app, { mode: 'bearer', token: TOKEN });
    await expect(tick(scheduledEvent, context)).rejects.toThrow(/^tick: answered 503: /);
    expect(t.calls).toHaveLength(0);
  });

  it('with auth disabled the tick sends no token and is still served', async () => {
    const t = testApp({ config: { auth: { mode: 'disabled' } } });
    const { tick } = lambdaHandlersOf(t.app, { mode: 'disabled' });
    await expect(tick(scheduledEvent, context)).resolves.toMatchObject({ claimed: 0, failed: 0 });
  });
});

describe('the kubeconfig on Lambda (functions/lambda-kubeconfig.ts)', () => {
  it('CAPTF_KUBECONFIG_CONTENT or an explicit KUBECONFIG is required; the env passes unchanged', () => {
    const withContent = { CAPTF_KUBECONFIG_CONTENT: '{"apiVersion":"v1"}', REDIS_URL: 'redis://r:6379' };
    expect(requireLambdaKubeconfig(withContent)).toBe(withContent);
    const withPath = { KUBECONFIG: '/etc/captf/kubeconfig' };
    expect(requireLambdaKubeconfig(withPath)).toBe(withPath);
    for (const env of [{}, { CAPTF_KUBECONFIG_CONTENT: '' }])
      expect(() => requireLambdaKubeconfig(env)).toThrow(
        'read Lambda config: CAPTF_KUBECONFIG_CONTENT (or KUBECONFIG) is required on Lambda',
      );
  });
});
