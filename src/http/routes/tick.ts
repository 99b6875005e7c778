import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { isIdleTick, runTick } from '../../schedule/tick.ts';
import { formatIssues } from '../../schemas/cloudevents.ts';
import { TickBodySchema } from '../../schemas/http.ts';
import type { AuthHook } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { AppError } from '../errors.ts';
import type { InFlight } from '../in-flight.ts';
import { acceptRawText } from '../raw-body.ts';
import { markQuiet } from '../request-log.ts';

/** The CloudEvent type a Knative PingSource (and a serverless.yml `cron` event) sends. */
export const PING_EVENT_TYPE = 'dev.knative.sources.ping';

/**
 * `POST /tick` (DESIGN.md section 8): the timer's call (PingSource or any scheduler). Runs due requeues
 * within the budget, then the sweep when due; answers counts only.
 */
export function tickRoutes(deps: AppDeps, inFlight: InFlight, authenticate: AuthHook): FastifyPluginAsync {
  return async (app) => {
    acceptRawText(app, deps.config.bodyLimitBytes);
    app.addHook('onRequest', authenticate);
    const tick = async (request: FastifyRequest, reply: FastifyReply) => {
      const text = typeof request.body === 'string' ? request.body.trim() : '';
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch (error) {
        throw new AppError('invalid-request', 'read tick body: not JSON', { cause: error });
      }
      const parsed = TickBodySchema.safeParse(body);
      if (!parsed.success)
        throw new AppError('invalid-request', `read tick body: ${formatIssues(parsed.error, 'body')}`);
      const report = await inFlight.track(() =>
        runTick({
          schedule: deps.schedule,
          settle: deps.settle,
          sweep: deps.sweep,
          clock: deps.clock,
          logger: request.log,
          budgetMs: deps.config.tickBudgetMs,
          concurrency: deps.config.tickConcurrency,
          batch: deps.config.tickBatch,
          watched: deps.config.watchNamespaces,
        }),
      );
      if (isIdleTick(report)) {
        markQuiet(request);
        request.log.debug({ tick: report }, 'tick done');
      } else request.log.info({ tick: report }, 'tick done');
      return reply.code(200).send(report);
    };
    app.post('/tick', tick);
    // Function platforms' cron triggers (serverless.yml `cron` events) can only call the service root with
    // a PingSource CloudEvent; anything else at the root is a wrong address, not a tick.
    app.post('/', async (request, reply) => {
      if (request.headers['ce-type'] !== PING_EVENT_TYPE) {
        throw new AppError(
          'route-not-found',
          `route POST /: only ${PING_EVENT_TYPE} events; send API server events to /events and ticks to /tick`,
        );
      }
      return tick(request, reply);
    });
  };
}
