// The AWS Lambda entry point (serverless.yml: `dist/lambda/handler.api` and `dist/lambda/handler.tick`,
// the bundle of this file). Lambda imports it once per instance: the handlers are built here, in the init
// phase, and every invocation reuses them, the Redis connection and the API server's keep-alive
// connections included.
import { createHandlers } from './handlers.ts';
import { lambdaHandlersOf } from './lambda-handlers.ts';
import { withKubeconfigFile } from './lambda-kubeconfig.ts';
import { productionStep } from './production-step.ts';

const handlers = createHandlers(withKubeconfigFile(process.env), productionStep);
const functions = lambdaHandlersOf(handlers.app, handlers.config.auth);
await handlers.ready();

/** serverless.yml `api`: every HTTP route. */
export const api = functions.api;
/** serverless.yml `tick`: the scheduled tick. */
export const tick = functions.tick;
