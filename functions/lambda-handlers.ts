import awsLambdaFastify from '@fastify/aws-lambda';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context, ScheduledEvent } from 'aws-lambda';
import type { FastifyInstance } from 'fastify';
import type { AuthConfig } from '../src/config.ts';
import type { TickReport } from '../src/schedule/tick.ts';

/**
 * The two AWS Lambda functions of serverless.yml over one fastify app (DESIGN.md section 15):
 * - `api`: an HTTP API (payload format 2.0) request, routed through the app by @fastify/aws-lambda, so
 *   routes, auth, body limits and status codes are those of the Knative Service;
 * - `tick`: the EventBridge schedule (the drift-check and requeue timer), which Lambda invokes with a
 *   Scheduled Event and no HTTP request; it runs `POST /tick` inside the app with the configured token.
 */

/** The HTTP API function. */
export type ApiHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyResultV2>;

/** The scheduled function: the tick's report, or an error (Lambda records a failed invocation). */
export type TickHandler = (event: ScheduledEvent, context: Context) => Promise<TickReport>;

/** Builds both functions. Call before `app.ready()`: the HTTP adapter registers its request hooks. */
export function lambdaHandlersOf(
  app: FastifyInstance,
  auth: AuthConfig,
): { api: ApiHandler; tick: TickHandler } {
  // decorateRequest off: no route reads the Lambda event, and it would add a getter to every request.
  const proxy = awsLambdaFastify<APIGatewayProxyEventV2>(app, { decorateRequest: false });
  const api: ApiHandler = (event, context) => proxy(event, context);
  const tick: TickHandler = async (event) => {
    const response = await app.inject({
      method: 'POST',
      url: '/tick',
      headers: {
        'content-type': 'application/json',
        // The schedule's own id, so the tick's log lines name the EventBridge event that caused them.
        'x-request-id': event.id,
        ...(auth.mode === 'bearer' && auth.token !== undefined
          ? { authorization: `Bearer ${auth.token}` }
          : {}),
      },
      payload: '{}',
    });
    if (response.statusCode !== 200) {
      throw new Error(`tick: answered ${response.statusCode}: ${response.body.slice(0, 500)}`);
    }
    return response.json<TickReport>();
  };
  return { api, tick };
}
