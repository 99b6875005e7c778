import type { FastifyPluginAsync } from 'fastify';
import { watchesNamespace } from '../../core/watch-scope.ts';
import { formatIssues } from '../../schemas/cloudevents.ts';
import { kindFromPath, ReconcileParamsSchema, ReconcileQuerySchema } from '../../schemas/http.ts';
import type { AuthHook } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { AppError } from '../errors.ts';
import type { InFlight } from '../in-flight.ts';
import { acceptRawText } from '../raw-body.ts';

/**
 * `POST /reconcile/{kind}/{namespace}/{name}` (DESIGN.md section 13): one step, answered as the StepOutcome;
 * `?dryRun=true` explains the decision without acting (and schedules nothing).
 */
export function reconcileRoutes(
  deps: AppDeps,
  inFlight: InFlight,
  authenticate: AuthHook,
): FastifyPluginAsync {
  return async (app) => {
    acceptRawText(app, deps.config.bodyLimitBytes);
    app.addHook('onRequest', authenticate);
    app.post('/reconcile/:kind/:namespace/:name', async (request, reply) => {
      const params = ReconcileParamsSchema.safeParse(request.params);
      if (!params.success)
        throw new AppError('invalid-request', `read path: ${formatIssues(params.error, 'path')}`);
      const kind = kindFromPath(params.data.kind);
      if (kind === undefined) {
        throw new AppError(
          'unknown-object-kind',
          'read path: unknown kind; expected TerraformCluster, TerraformMachine or TerraformMachinePool',
        );
      }
      const query = ReconcileQuerySchema.safeParse(request.query);
      if (!query.success)
        throw new AppError('invalid-request', `read query: ${formatIssues(query.error, 'query')}`);
      if (!watchesNamespace(deps.config.watchNamespaces, params.data.namespace)) {
        throw new AppError(
          'namespace-not-watched',
          `read path: namespace ${params.data.namespace} is not watched by this installation (CAPTF_WATCH_NAMESPACES: ${deps.config.watchNamespaces.join(',')})`,
        );
      }
      const ref = { kind, namespace: params.data.namespace, name: params.data.name };
      const { outcome, resolved } = await inFlight.track(() =>
        deps.settle(ref, { log: request.log, dryRun: query.data.dryRun }),
      );
      if (resolved.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(resolved.retryAfterSeconds));
      return reply.code(resolved.status).send({ dryRun: query.data.dryRun, outcome });
    });
  };
}
