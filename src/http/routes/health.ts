import type { FastifyPluginAsync } from 'fastify';
import type { AuthHook } from '../auth.ts';
import type { AppDeps } from '../deps.ts';

/** Seconds a load balancer waits before asking `/readyz` again after a 503. */
const READY_RETRY_AFTER_SECONDS = 5;

/**
 * `GET /healthz` (the process answers), `GET /readyz` (Redis and the API server reachable) and `GET /metrics`
 * (Prometheus text) — DESIGN.md sections 13 and 14. Read-only, so unauthenticated; `/metrics` asks for the
 * bearer auth of the other routes when `authenticate` is given (`CAPTF_METRICS_AUTH`: a public endpoint).
 */
export function healthRoutes(deps: AppDeps, authenticate?: AuthHook): FastifyPluginAsync {
  return async (app) => {
    app.get('/healthz', async () => ({ status: 'ok' }));
    app.get('/readyz', async (_request, reply) => {
      const checks = await deps.readiness();
      const ready = checks.redis.ok && checks.apiServer.ok;
      if (!ready) reply.header('retry-after', String(READY_RETRY_AFTER_SECONDS));
      return reply.code(ready ? 200 : 503).send({ ready, checks });
    });
    app.get('/metrics', authenticate ? { onRequest: authenticate } : {}, async (_request, reply) => {
      const text = await deps.metrics.registry.metrics();
      return reply.code(200).header('content-type', deps.metrics.registry.contentType).send(text);
    });
  };
}
