import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { bearerAuthHook } from './auth.ts';
import type { AppDeps } from './deps.ts';
import { AppError, normaliseError } from './errors.ts';
import { createInFlight } from './in-flight.ts';
import { eventsRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { reconcileRoutes } from './routes/reconcile.ts';
import { tickRoutes } from './routes/tick.ts';

/**
 * The compilers fastify would build for route JSON schemas. No route has one (bodies are parsed with zod,
 * src/schemas), so fastify's ajv and fast-json-stringify compilers are never needed; passing these keeps
 * fastify from loading them at every cold start. A route given a schema fails at registration.
 */
const noRouteSchemas = () => () => {
  throw new Error('build route schema: routes validate with zod (src/schemas), not JSON schemas');
};

/** A caller's `x-request-id` is kept only when it is short and plain; otherwise we mint one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Builds the HTTP application (DESIGN.md section 13) from injected dependencies; no global state, so tests
 * build a fresh app each. Closing the app waits for in-flight steps (graceful shutdown).
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  // The instance is typed with pino's Logger; routes take the base FastifyInstance (FastifyBaseLogger).
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.config.bodyLimitBytes,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    genReqId: (request) => {
      const offered = request.headers['x-request-id'];
      return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    schemaController: {
      compilersFactory: { buildValidator: noRouteSchemas, buildSerializer: noRouteSchemas },
    },
  }) as unknown as FastifyInstance;
  const inFlight = createInFlight();

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onClose', async () => {
    await inFlight.drain();
  });
  app.setNotFoundHandler(async (request) => {
    throw new AppError(
      'route-not-found',
      `route ${request.method} ${request.url.split('?')[0]?.slice(0, 200)}: not found`,
    );
  });
  app.setErrorHandler(async (error, request, reply) => {
    const appError = normaliseError(error);
    const fields = { code: appError.code, status: appError.status };
    if (appError.status >= 500)
      request.log.warn({ ...fields, err: appError.cause ?? appError }, appError.message);
    else request.log.info(fields, appError.message);
    if (appError.retryAfterSeconds !== undefined)
      reply.header('retry-after', String(appError.retryAfterSeconds));
    return reply
      .code(appError.status)
      .send({ error: { code: appError.code, message: appError.message }, requestId: request.id });
  });

  // One hook for every guarded route, so they share its TokenReview cache.
  const authenticate = bearerAuthHook(deps.config.auth, {
    ...(deps.tokenReviews === undefined ? {} : { reviews: deps.tokenReviews }),
    clock: deps.clock,
  });
  app.register(healthRoutes(deps));
  app.register(eventsRoutes(deps, inFlight, authenticate));
  app.register(reconcileRoutes(deps, inFlight, authenticate));
  app.register(tickRoutes(deps, inFlight, authenticate));
  return app;
}
