import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * The handlers' request log: one line per answer (`request completed`: method, url, status, ms) in place
 * of fastify's two (`incoming request` carries nothing the answer line lacks). A route marks an answer that
 * changed nothing (a tick that found nothing due and no sweep to run) as quiet, and its 2xx is logged at
 * debug: a controller at rest writes nothing at info however often its timer calls it. Every other answer,
 * and every answer other than 2xx, is logged at info; errors stay with fastify's own lines.
 */
export class AnswerLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (error) {
      super.requestCompleted(error, request, reply, metadata);
      return;
    }
    const fields = {
      req: { method: request.method, url: request.url },
      res: { statusCode: reply.statusCode },
      responseTime: reply.elapsedTime,
    };
    if (quiet.has(request) && reply.statusCode < 300) reply.log.debug(fields, 'request completed');
    else reply.log.info(fields, 'request completed');
  }
}

const quiet = new WeakSet<FastifyRequest>();

/** Logs this request's answer at debug when it is 2xx: the call found nothing to do. */
export function markQuiet(request: FastifyRequest): void {
  quiet.add(request);
}
