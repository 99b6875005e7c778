import type { FastifyPluginAsync } from 'fastify';
import { heldPodOf } from '../../core/pod-release.ts';
import { secretSource } from '../../core/wake.ts';
import type { AuthHook } from '../auth.ts';
import { parseCloudEvent } from '../cloudevent.ts';
import type { AppDeps, OwnerLookup } from '../deps.ts';
import { AppError } from '../errors.ts';
import { dedupeKeyOf, targetOf } from '../event-target.ts';
import type { InFlight } from '../in-flight.ts';
import { acceptRawText } from '../raw-body.ts';
import { secretOf } from '../secret-event.ts';

/**
 * `POST /events` (DESIGN.md section 13): one ApiServerSource CloudEvent → at most one step for the object it
 * is about. The payload is only a hint; a version the controller has already seen costs one cheap check:
 * a resource-mode event carries its `uid@resourceVersion`; a reference-mode event about one of our kinds
 * carries neither, so its object's version is read (one GET). After a step, the version the step left is
 * remembered too, so the events its own writes cause (and the `add` replay of a restarted source) end at
 * that check. Events about Jobs, Pods and plans in reference mode always reach the step: their
 * change is not visible in the owner's version; so do those about a Machine or MachinePool, for the object
 * of ours it names. An event about a Cluster API Cluster runs no step itself: the objects of its cluster
 * whose status it outdated (pause, provisioned infrastructure) get a requeue due now, as woken dependents
 * do, and the timer runs them. An event about a pod being deleted while it holds our finalizer hands that
 * pod to the step, which releases it at once when nothing will read its result (src/core/pod-release.ts);
 * when another call holds the object's step lock, it answers 429 so the source sends it again. An event
 * about a Secret (./secret-event.ts) runs no step either: the objects waiting for it get a requeue due now,
 * at no API request.
 */
/** How soon a held pod's event comes back when its object's step lock was taken (a step takes about 1 s). */
const HELD_POD_RETRY_SECONDS = 1;

export function eventsRoutes(deps: AppDeps, inFlight: InFlight, authenticate: AuthHook): FastifyPluginAsync {
  return async (app) => {
    acceptRawText(app, deps.config.bodyLimitBytes);
    app.addHook('onRequest', authenticate);
    app.post('/events', async (request, reply) => {
      const body = typeof request.body === 'string' ? request.body : '';
      const parsed = parseCloudEvent(request.headers, body);
      if (!parsed.ok) throw new AppError(parsed.code, parsed.message);
      const { subject } = parsed;
      const target = targetOf(subject, deps.config.watchNamespaces);
      const eventLog = request.log.child({
        eventType: `${subject.mode}.${subject.verb}`,
        eventKind: subject.kind,
      });
      const secret = secretOf(subject, deps.config.watchNamespaces);
      if (secret !== undefined) {
        const woken = await deps.dependents.take(secretSource(secret.namespace, secret.name));
        const nowMs = deps.clock();
        for (const ref of woken) await deps.schedule.add(ref, nowMs);
        if (woken.length > 0) eventLog.info({ secret, woken }, 'secret woke');
        return reply.code(200).send({ handled: true, woken });
      }
      if (target.kind === 'unsupported') throw new AppError('unsupported-event-kind', target.message);
      if (target.kind === 'ignored') {
        eventLog.debug({ reason: target.reason }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: target.reason });
      }
      if (target.kind === 'cluster') {
        const wake = await deps.clusterMembers.toWake(target.cluster);
        if (!wake.found) {
          eventLog.debug({ reason: wake.reason }, 'event ignored');
          return reply.code(200).send({ handled: false, reason: wake.reason });
        }
        const nowMs = deps.clock();
        for (const ref of wake.refs) await deps.schedule.add(ref, nowMs);
        if (wake.refs.length > 0)
          eventLog.info({ cluster: target.cluster, woken: wake.refs }, 'cluster woke');
        return reply.code(200).send({ handled: true, woken: wake.refs });
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
      // A pod being deleted with our finalizer: its step releases it when nothing will read it (section 7).
      const heldPod = lookup.heldPod ?? (subject.kind === 'Pod' ? heldPodOf(subject) : undefined);
      // Settling remembers the version the step left (src/settle/settle.ts); the event's own is kept here.
      const { outcome, resolved } = await inFlight.track(() =>
        deps.settle(ref, { log: eventLog, ...(heldPod !== undefined ? { heldPod } : {}) }),
      );
      // The requeue a deferral schedules does not carry the held pod, so the pod would wait for the sweep:
      // the source sends this event again instead (429 is retried by Knative's sources and the relay).
      if (heldPod !== undefined && outcome.reason === 'StepLockHeld') {
        reply.header('retry-after', String(HELD_POD_RETRY_SECONDS));
        return reply.code(429).send({ handled: false, reason: 'StepLockHeld', outcome });
      }
      if (dedupeKey !== undefined && resolved.status !== 503) await deps.dedupe.remember(dedupeKey);
      if (resolved.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(resolved.retryAfterSeconds));
      return reply.code(resolved.status).send({ handled: resolved.status !== 503, outcome });
    });
  };
}
