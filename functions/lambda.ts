// The AWS Lambda entry point (serverless.yml: `dist/lambda/handler.api` and `dist/lambda/handler.tick`,
// the bundle of this file). Lambda imports it once per instance: the handlers are built here, in the init
// phase, and every invocation reuses them, the Redis connection and the API server's keep-alive
// connections included. Secrets named by `CAPTF_SSM_*` are read from SSM Parameter Store first
// (functions/lambda-secrets.ts), read again after `CAPTF_SECRETS_TTL_SECONDS` and at once when a request is
// refused as unauthenticated (a rotated token); new values build the handlers again.
import { SSMClient } from '@aws-sdk/client-ssm';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context, ScheduledEvent } from 'aws-lambda';
import { createHandlers } from './handlers.ts';
import { lambdaHandlersOf } from './lambda-handlers.ts';
import { requireLambdaKubeconfig } from './lambda-kubeconfig.ts';
import {
  type ReadSecrets,
  readSecrets,
  requestedParameters,
  secretsChanged,
  secretsTtlSeconds,
  withSecrets,
} from './lambda-secrets.ts';
import { productionStep } from './production-step.ts';

/**
 * A request refused for its bearer token reads the secrets again at most this often after the last read, so
 * callers with wrong tokens cannot hammer SSM (nor delay a rotation by more than this).
 */
const REREAD_ON_401_MIN_MS = 10_000;

const ssm = requestedParameters(process.env).size > 0 ? new SSMClient({}) : undefined;
const ttlMs = secretsTtlSeconds(process.env) * 1000;
let secrets: ReadSecrets = ssm
  ? await readSecrets(process.env, ssm, Date.now)
  : { values: {}, readAtMs: Date.now() };

async function build(read: ReadSecrets) {
  const handlers = createHandlers(requireLambdaKubeconfig(withSecrets(process.env, read)), productionStep);
  const functions = lambdaHandlersOf(handlers.app, handlers.config.auth);
  await handlers.ready();
  return { handlers, functions };
}

let current = await build(secrets);

/** Reads the secrets again; builds the handlers again when a value changed. True when it did. */
async function reread(): Promise<boolean> {
  if (!ssm) return false;
  const next = await readSecrets(process.env, ssm, Date.now);
  const changed = secretsChanged(secrets, next);
  secrets = next;
  if (!changed) return false;
  // Lambda runs one invocation per instance at a time: nothing is in flight on the old handlers.
  const old = current;
  current = await build(next);
  await old.handlers.close();
  return true;
}

function statusOf(response: APIGatewayProxyResultV2): number {
  return typeof response === 'object' && response !== null ? (response.statusCode ?? 200) : 200;
}

/** serverless.yml `api`: every HTTP route. */
export async function api(event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyResultV2> {
  if (ssm && Date.now() - secrets.readAtMs >= ttlMs) await reread();
  const response = await current.functions.api(event, context);
  // Only a token that does not match may be a rotated one; a request without any proves nothing.
  const bearer = event.headers?.authorization?.startsWith('Bearer ') === true;
  if (statusOf(response) === 401 && bearer && ssm && Date.now() - secrets.readAtMs >= REREAD_ON_401_MIN_MS) {
    if (await reread()) return current.functions.api(event, context);
  }
  return response;
}

/** serverless.yml `tick`: the scheduled tick. */
export async function tick(event: ScheduledEvent, context: Context) {
  if (ssm && Date.now() - secrets.readAtMs >= ttlMs) await reread();
  return current.functions.tick(event, context);
}
