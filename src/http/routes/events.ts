import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { CustomObject } from '../../adapters/kube/custom-object.ts';
import { canonicalJson } from '../../core/canonical-json.ts';
import type { ClusterFacts } from '../../core/cluster-facts.ts';
import {
  type DigestedObject,
  jobEventVerdict,
  objectDigest,
  objectEventVerdict,
  podEventVerdict,
  type QuietReason,
  type SeenObject,
} from '../../core/event-relevance.ts';
import { LABELS } from '../../core/job-labels.ts';
import type { ObjectRef } from '../../core/object-ref.ts';
import { heldPodOf } from '../../core/pod-release.ts';
import { secretSource } from '../../core/wake.ts';
import { EventJobSchema, EventPodSchema, type EventSubject } from '../../schemas/cloudevents.ts';
import { owningClusterOf } from '../../step/read.ts';
import { capiClusterViewOf, capiOwnerDigest, infrastructureTargetOf } from '../../step/read-capi.ts';
import type { AuthHook } from '../auth.ts';
import { parseCloudEvent } from '../cloudevent.ts';
import type { AppDeps, OwnedObject, OwnerLookup, WatchedObject } from '../deps.ts';
import { AppError } from '../errors.ts';
import { dedupeKeyOf, targetOf } from '../event-target.ts';
import type { InFlight } from '../in-flight.ts';
import { acceptRawText } from '../raw-body.ts';
import { awaitRunningStep } from '../running-step.ts';
import { secretOf } from '../secret-event.ts';

/**
 * `POST /events` (DESIGN.md section 13): one ApiServerSource CloudEvent → at most one step for the object it
 * is about. An event's copy (Resource mode) may only say there is nothing to do, never what to do: a Job
 * that is still running or already bookkept, a pod that neither holds our finalizer while being deleted, nor
 * cannot start, nor was left by a Job deleted with orphaning and no longer runs, and a version of our object that is stale, a duplicate or unchanged against the newest one
 * handled (src/core/event-relevance.ts) are answered without a step and without a read; a reference-mode
 * event about our kinds costs one GET for the same judgement, one about a Job or pod the owner lookup's GET.
 * After a step, the version the step left is remembered too, so the events its own writes cause (and the
 * `add` replay of a restarted source) end at that check. Events about a Machine or MachinePool reach the
 * step for the object of ours it names. An event about a Cluster API Cluster runs no step itself: the
 * objects of its cluster whose status it outdated (pause, provisioned infrastructure) get a requeue due now,
 * as woken dependents do, and the timer runs them. An event about a pod being deleted while it holds our
 * finalizer hands that pod to the step, which releases it at once when nothing will read its result
 * (src/core/pod-release.ts); when another call holds the object's step lock, it answers 429 so the source
 * sends it again.
 * An event about a Secret (./secret-event.ts) runs no step either: the objects waiting for it get a
 * requeue due now, at no API request.
 * An event about a Cluster or a TerraformCluster updates the cluster facts its machines and pools read
 * (src/step/cluster-facts.ts) first, before anything it wakes or steps runs.
 */
/** How soon a held pod's event comes back when its object's step lock was taken (a step takes about 1 s). */
const HELD_POD_RETRY_SECONDS = 1;

/** The answer's reason for an event about one of our objects that starts no step. */
const VERDICT_REASONS = { duplicate: 'Duplicate', stale: 'Stale', unchanged: 'Unchanged' } as const;

/**
 * Why a resource-mode event about one of our Jobs or pods starts no step, judged from its copy
 * (src/core/event-relevance.ts); undefined when it may (a copy that does not parse is left to the step).
 */
function quietOwned(subject: EventSubject): QuietReason | undefined {
  if (subject.object === undefined) return undefined;
  if (subject.kind === 'Job') {
    const job = EventJobSchema.safeParse(subject.object);
    if (!job.success) return undefined;
    const verdict = jobEventVerdict(subject.verb, job.data);
    return verdict.matters ? undefined : verdict.reason;
  }
  if (subject.kind === 'Pod') {
    const pod = EventPodSchema.safeParse(subject.object);
    if (!pod.success) return undefined;
    const verdict = podEventVerdict(subject.verb, pod.data);
    return verdict.matters ? undefined : verdict.reason;
  }
  return undefined;
}

/** A resource-mode event about a Machine or MachinePool, as its copy says. */
interface MachineEvent {
  owned: OwnedObject;
  /** The object of ours it drives; undefined when it names another provider's. */
  ref: ObjectRef | undefined;
  /** Its version, with the digest of what a step reads of it ('' for a deletion: always news). */
  seen: SeenObject;
}

/** The Machine or MachinePool event read from its copy; undefined for any other, or without a copy. */
function machineEvent(subject: EventSubject, owned: OwnedObject): MachineEvent | undefined {
  const kind = owned.kind;
  if (kind !== 'Machine' && kind !== 'MachinePool') return undefined;
  const key = dedupeKeyOf(subject);
  if (subject.object === undefined || key === undefined) return undefined;
  return {
    owned,
    ref: infrastructureTargetOf(kind, owned.namespace, subject.object as CustomObject),
    seen: { ...key, digest: subject.verb === 'delete' ? '' : capiOwnerDigest(kind, subject.object) },
  };
}

/**
 * Why a version of a watched object starts nothing, against the newest one handled: `Duplicate`, `Stale`,
 * or `Unchanged` (remembered as the newest then); undefined when it is news.
 */
async function quietVersion(
  deps: Pick<AppDeps, 'newest'>,
  object: WatchedObject,
  seen: SeenObject,
): Promise<(typeof VERDICT_REASONS)[keyof typeof VERDICT_REASONS] | undefined> {
  const verdict = objectEventVerdict(seen, await deps.newest.newest(object));
  if (verdict.kind === 'changed') return undefined;
  if (verdict.kind === 'unchanged') await deps.newest.remember(object, seen);
  return VERDICT_REASONS[verdict.kind];
}

/**
 * Updates one part of the cluster facts cache from an event, before anything the event wakes runs: the
 * view its copy shows at its version (never over a newer one), or, for a deletion or a reference-mode event
 * (no copy), the part forgotten, so members read it live. A TerraformCluster's reference-mode event names
 * no cluster label: its own step, which such an event runs unless nothing changed, records it instead.
 */
async function updateClusterFacts(deps: Pick<AppDeps, 'clusterFacts'>, subject: EventSubject): Promise<void> {
  const cache = deps.clusterFacts;
  if (cache === undefined) return;
  const copy = subject.object as CustomObject | undefined;
  const version = dedupeKeyOf(subject);
  if (subject.kind === 'Cluster') {
    if (subject.verb === 'delete' || copy === undefined || version === undefined)
      return cache.forget(subject.namespace, subject.name, 'capi');
    return cache.remember(subject.namespace, subject.name, {
      capi: { view: capiClusterViewOf(copy), version },
    });
  }
  const clusterName = copy?.metadata?.labels?.[LABELS.clusterName];
  if (subject.kind !== 'TerraformCluster' || copy === undefined || clusterName === undefined) return;
  if (subject.verb === 'delete' || version === undefined)
    return cache.forget(subject.namespace, clusterName, 'owning');
  const facts: ClusterFacts = { owning: { view: owningClusterOf(copy), version } };
  return cache.remember(subject.namespace, clusterName, facts);
}

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
      // The version the event is about, where it names one: "which change started this step?"
      const eventLog = request.log.child({
        eventType: `${subject.mode}.${subject.verb}`,
        eventKind: subject.kind,
        ...(subject.resourceVersion !== undefined ? { eventResourceVersion: subject.resourceVersion } : {}),
      });
      const secret = secretOf(subject, deps.config.watchNamespaces);
      if (secret !== undefined) {
        const woken = await deps.dependents.take(secretSource(secret.namespace, secret.name));
        const nowMs = deps.clock();
        for (const ref of woken) await deps.schedule.add(ref, nowMs);
        // Under `secretRef`: the logger redacts any `secret` field, and the name is what an operator needs here.
        if (woken.length > 0) eventLog.info({ secretRef: secret, woken }, 'secret woke');
        return reply.code(200).send({ handled: true, woken });
      }
      if (target.kind === 'unsupported') throw new AppError('unsupported-event-kind', target.message);
      if (target.kind === 'ignored') {
        eventLog.debug({ reason: target.reason }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: target.reason });
      }
      if (target.kind === 'cluster') {
        await updateClusterFacts(deps, subject);
        // Its copy says whether its pause or infrastructure changed since the version last handled.
        const key = dedupeKeyOf(subject);
        const clusterSeen =
          key !== undefined && subject.object !== undefined
            ? {
                ...key,
                digest:
                  subject.verb === 'delete'
                    ? ''
                    : createHash('sha256')
                        .update(canonicalJson(capiClusterViewOf(subject.object as CustomObject)))
                        .digest('hex'),
              }
            : undefined;
        const clusterObject = { kind: 'Cluster', ...target.cluster };
        const clusterQuiet = clusterSeen && (await quietVersion(deps, clusterObject, clusterSeen));
        if (clusterQuiet) {
          eventLog.debug({ reason: clusterQuiet }, 'event ignored');
          return reply.code(200).send({ handled: false, reason: clusterQuiet });
        }
        const wake = await deps.clusterMembers.toWake(target.cluster);
        if (!wake.found) {
          eventLog.debug({ reason: wake.reason }, 'event ignored');
          return reply.code(200).send({ handled: false, reason: wake.reason });
        }
        const nowMs = deps.clock();
        for (const ref of wake.refs) await deps.schedule.add(ref, nowMs);
        if (clusterSeen !== undefined) await deps.newest.remember(clusterObject, clusterSeen);
        if (wake.refs.length > 0)
          eventLog.info({ cluster: target.cluster, woken: wake.refs }, 'cluster woke');
        return reply.code(200).send({ handled: true, woken: wake.refs });
      }
      // A Machine or MachinePool copy names the object of ours it drives, and says whether anything a
      // step reads of it changed; in Reference mode the owner lookup reads it.
      const machine = target.kind === 'lookup' ? machineEvent(subject, target.owned) : undefined;
      if (machine !== undefined && machine.ref === undefined) {
        eventLog.debug({ reason: 'OwnerNotOurs' }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: 'OwnerNotOurs' });
      }
      const machineQuiet = machine && (await quietVersion(deps, machine.owned, machine.seen));
      if (machineQuiet) {
        eventLog.debug({ reason: machineQuiet }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: machineQuiet });
      }
      const lookup: OwnerLookup =
        target.kind === 'object'
          ? { found: true, ref: target.ref }
          : machine?.ref !== undefined
            ? { found: true, ref: machine.ref }
            : await deps.owners.resolve(target.owned);
      if (!lookup.found) {
        eventLog.debug({ reason: lookup.reason }, 'event ignored');
        return reply.code(200).send({ handled: false, reason: lookup.reason });
      }
      const { ref } = lookup;
      if (target.kind === 'object' && ref.kind === 'TerraformCluster')
        await updateClusterFacts(deps, subject);
      const quiet = lookup.quiet ?? (target.kind === 'object' ? quietOwned(subject) : undefined);
      if (quiet !== undefined) {
        eventLog.debug({ reason: quiet }, 'event ignored: nothing the step reads changed');
        return reply.code(200).send({ handled: false, reason: quiet });
      }
      let dedupeKey = dedupeKeyOf(subject);
      // One of our objects: its copy (resource mode) or one GET (reference mode) against the newest
      // version handled tells a duplicate, a stale or an unchanged version from one a step must see.
      let seen: SeenObject | undefined;
      if (target.kind === 'object' && target.reason === 'OurKind') {
        seen =
          dedupeKey !== undefined && subject.object !== undefined
            ? { ...dedupeKey, digest: objectDigest(subject.object as DigestedObject) }
            : await deps.versions.versionOf(ref);
        if (seen === undefined) {
          eventLog.debug({ reason: 'ObjectGone' }, 'event ignored');
          return reply.code(200).send({ handled: false, reason: 'ObjectGone' });
        }
        dedupeKey = { uid: seen.uid, resourceVersion: seen.resourceVersion };
      }
      // The event's own copy of one of our objects (Resource mode, not a deletion): a step may have written it.
      const copy = subject.object !== undefined && subject.verb !== 'delete' ? seen : undefined;
      // The version against what is known of it: a duplicate, the echo of a step's own write, stale or
      // unchanged content; undefined when it is news a step must see.
      const known = async (): Promise<{ reason: string; log: string } | undefined> => {
        if (dedupeKey !== undefined && (await deps.dedupe.seen(dedupeKey))) {
          // The echo of a step's own write: its content is now known too.
          if (seen !== undefined) await deps.newest.remember(ref, seen);
          return { reason: 'Duplicate', log: 'event ignored: duplicate' };
        }
        // A version a step wrote, carried by its own event (Resource mode only: a reference-mode event
        // reads the current version, which a retry of the event that started that step would read too).
        // Nothing is remembered: the step that wrote it settles what it handled (DESIGN.md section 8).
        if (copy !== undefined && (await deps.dedupe.ownWrite(copy)))
          return { reason: 'OwnWrite', log: 'event ignored: own write' };
        // A deletion always reaches the step: the object gone is news its copy cannot show.
        const objectQuiet = seen && subject.verb !== 'delete' && (await quietVersion(deps, ref, seen));
        return objectQuiet ? { reason: objectQuiet, log: 'event ignored' } : undefined;
      };
      let verdict = await known();
      // News that finds a step of its object running is often that step's own write, whose event beat the
      // write's mark (the watch event and the write's answer leave the API server together): wait for the
      // step briefly and judge again, instead of a deferral and a step 2 s later that finds nothing.
      if (verdict === undefined && copy !== undefined && (await awaitRunningStep(deps.dedupe, ref, copy)))
        verdict = await known();
      if (verdict !== undefined) {
        eventLog.debug({ dedupeKey, reason: verdict.reason }, verdict.log);
        return reply.code(200).send({ handled: false, reason: verdict.reason });
      }
      // A pod being deleted with our finalizer: its step releases it when nothing will read it (section 7).
      const heldPod = lookup.heldPod ?? (subject.kind === 'Pod' ? heldPodOf(subject) : undefined);
      // Settling remembers the version the step left (src/settle/settle.ts); the event's own is kept here.
      const { outcome, resolved } = await inFlight.track(() =>
        deps.settle(ref, {
          log: eventLog,
          ...(seen !== undefined ? { event: seen } : {}),
          ...(heldPod !== undefined ? { heldPod } : {}),
          // A Job's or pod's news is about what only the Job list shows (src/core/jobs-read.ts).
          ...(subject.kind === 'Job' || subject.kind === 'Pod' ? { listJobs: true } : {}),
        }),
      );
      // The requeue a deferral schedules does not carry the held pod, so the pod would wait for the sweep:
      // the source sends this event again instead (429 is retried by Knative's sources and the relay).
      if (heldPod !== undefined && outcome.reason === 'StepLockHeld') {
        reply.header('retry-after', String(HELD_POD_RETRY_SECONDS));
        return reply.code(429).send({ handled: false, reason: 'StepLockHeld', outcome });
      }
      if (dedupeKey !== undefined && resolved.status !== 503) await deps.dedupe.remember(dedupeKey);
      if (machine !== undefined && resolved.status !== 503)
        await deps.newest.remember(machine.owned, machine.seen);
      if (resolved.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(resolved.retryAfterSeconds));
      return reply.code(resolved.status).send({ handled: resolved.status !== 503, outcome });
    });
  };
}
