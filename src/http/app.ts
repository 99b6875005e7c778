import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { bearerAuthHook } from './auth.ts';
import type { AppDeps } from './deps.ts';
import { AppError, normaliseError } from './errors.ts';
import { createInFlight } from './in-flight.ts';
import { AnswerLogController } from './request-log.ts';
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

/** A path echoed in a 404: short, and only unreserved characters; any other is untrusted text, not shown. */
const PLAIN_PATH = /^[A-Za-z0-9._~/-]{1,200}$/;

/**
 * Longest path parameter the router matches, in characters as sent: an object name may have 253
 * (DNS-1123 subdomain), and the router's default of 100 answered a valid long name with its own 414.
 */
const MAX_PARAM_LENGTH = 253;

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
    // One line per answer instead of two, quiet answers at debug (src/http/request-log.ts).
    logController: new AnswerLogController({ requestIdLogLabel: 'requestId' }),
    genReqId: (request) => {
      const offered = request.headers['x-request-id'];
      return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    schemaController: {
      compilersFactory: { buildValidator: noRouteSchemas, buildSerializer: noRouteSchemas },
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // The router's refusals (bad percent-escapes, overlong segments) are answered like every other error,
    // not with fastify's own body, which has no request id and quotes the path.
    frameworkErrors: (error, request, reply) => answerError(error, request, reply),
  }) as unknown as FastifyInstance;
  const inFlight = createInFlight();

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onClose', async () => {
    await inFlight.drain();
  });
  app.setNotFoundHandler(async (request) => {
    const path = request.url.split('?')[0] ?? '';
    throw new AppError(
      'route-not-found',
      `route ${request.method} ${PLAIN_PATH.test(path) ? path : '(path not shown)'}: not found`,
    );
  });
  app.setErrorHandler(answerError);

  // One hook for every guarded route, so they share its TokenReview cache.
  const authenticate = bearerAuthHook(deps.config.auth, {
    ...(deps.tokenReviews === undefined ? {} : { reviews: deps.tokenReviews }),
    clock: deps.clock,
  });
  app.register(healthRoutes(deps, deps.config.metricsAuth === true ? authenticate : undefined));
  app.register(eventsRoutes(deps, inFlight, authenticate));
  app.register(reconcileRoutes(deps, inFlight, authenticate));
  app.register(tickRoutes(deps, inFlight, authenticate));
  return app;
}

/** The one answer to anything thrown: the registry's status and code, a clear message, the request id. */
function answerError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const appError = normaliseError(error);
  const fields = { code: appError.code, status: appError.status };
  if (appError.status >= 500)
    request.log.warn({ ...fields, err: appError.cause ?? appError }, appError.message);
  else request.log.info(fields, appError.message);
  if (appError.retryAfterSeconds !== undefined)
    reply.header('retry-after', String(appError.retryAfterSeconds));
  // The router's refusals are answered before any route's hooks run, so the onSend hook never sets it.
  reply.header('x-request-id', request.id);
  return reply
    .code(appError.status)
    .send({ error: { code: appError.code, message: appError.message }, requestId: request.id });
}
