import type { FastifyPluginAsync } from 'fastify';
import { bearerAuthHook } from '../auth.ts';
import { parseCloudEvent } from '../cloudevent.ts';
import type { AppDeps, ObjectVersion, OwnerLookup } from '../deps.ts';
import { AppError } from '../errors.ts';
import { dedupeKeyOf, targetOf } from '../event-target.ts';
import { acceptRawText } from '../raw-body.ts';
import { callStep, type StepCallDeps } from '../step-call.ts';

/**
 * `POST /events` (DESIGN.md section 13): one ApiServerSource CloudEvent → at most one step for the object it
 * is about. The payload is only a hint; a version the controller has already seen costs one cheap check:
 * a resource-mode event carries its `uid@resourceVersion`; a reference-mode event about one of our kinds
 * carries neither, so its object's version is read (one GET). After a step, the version the step left is
 * remembered too, so the events its own writes cause (and the `add` replay of a restarted source) end at
 * that check. Events about Jobs, Pods, Secrets and plans in reference mode always reach the step: their
 * change is not visible in the owner's version.
 */
export function eventsRoutes(deps: AppDeps, stepCall: StepCallDeps): FastifyPluginAsync {
  return async (app) => {
    acceptRawText(app, deps.config.bodyLimitBytes);
    app.addHook('onRequest', bearerAuthHook(deps.config.auth));
    app.post('/events', async (request, reply) => {
      const body = typeof request.body === 'string' ? request.body : '';
      const parsed = parseCloudEvent(request.headers, body);
      if (!parsed.ok) throw new AppError(parsed.code, parsed.message);
      const { subject } = parsed;
      const target = targetOf(subject);
      const eventLog = request.log.child({
        eventType: `${subject.mode}.${subject.verb}`,
        eventKind: subject.kind,
      });
      if (target.kind === 'unsupported') throw new AppError('unsupported-event-kind', target.message);
      if (target.kind === 'ignored') {
        eventLog.debug({ reason: target.reason }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: target.reason });
      }
      const lookup: OwnerLookup =
        target.kind === 'object' ? { found: true, ref: target.ref } : await deps.owners.resolve(target.owned);
      if (!lookup.found) {
        eventLog.debug({ reason: lookup.reason }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: lookup.reason });
      }
      const { ref } = lookup;
      let dedupeKey = dedupeKeyOf(subject);
      if (dedupeKey === undefined && target.kind === 'object') {
        dedupeKey = await deps.versions.versionOf(ref);
        if (dedupeKey === undefined) {
          eventLog.debug({ reason: 'ObjectGone' }, 'event ignored');
          return reply.code(200).send({ handled: false, reason: 'ObjectGone' });
        }
      }
      if (dedupeKey !== undefined && (await deps.dedupe.seen(dedupeKey))) {
        eventLog.debug({ dedupeKey }, 'event ignored: duplicate');
        return reply.code(200).send({ handled: false, reason: 'Duplicate' });
      }
      const answer = await callStep(stepCall, eventLog, ref);
      if (answer.status !== 503) {
        for (const version of versionsToRemember(dedupeKey, answer.outcome.observed))
          await deps.dedupe.remember(version);
      }
      if (answer.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(answer.retryAfterSeconds));
      return reply.code(answer.status).send({ handled: answer.status !== 503, outcome: answer.outcome });
    });
  };
}

/** The event's own version and the one the step left, each once. */
function versionsToRemember(
  event: ObjectVersion | undefined,
  observed: ObjectVersion | undefined,
): ObjectVersion[] {
  const versions = [event, observed].filter((v): v is ObjectVersion => v !== undefined);
  return versions.filter(
    (v, index) =>
      versions.findIndex((w) => w.uid === v.uid && w.resourceVersion === v.resourceVersion) === index,
  );
}
