import { hostname } from 'node:os';
import type { V1Job, V1ObjectMeta } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../src/adapters/clock.ts';
import type { KubeAdapter } from '../src/adapters/kube/adapter.ts';
import { isKubeError, KUBE_ERROR_TABLE, KubeError } from '../src/adapters/kube/errors.ts';
import type { RedisAdapter } from '../src/adapters/redis/adapter.ts';
import { EVENT_SEEN_TTL_SECONDS, type VersionMark } from '../src/adapters/redis/event-dedupe.ts';
import type { Unknown } from '../src/adapters/redis/unknown.ts';
import type { Config } from '../src/config.ts';
import { clusterMembersToWake } from '../src/core/cluster-api.ts';
import { jobEventVerdict, objectDigest, podEventVerdict } from '../src/core/event-relevance.ts';
import { finishedCondition } from '../src/core/job-conditions.ts';
import { ANNOTATIONS, LABELS, POD_RESULT_FINALIZER } from '../src/core/job-labels.ts';
import { OBJECT_KINDS, type ObjectRef, refKey } from '../src/core/object-ref.ts';
import { heldPodOf } from '../src/core/pod-release.ts';
import { SAFETY_REQUEUE_MAX_SECONDS } from '../src/core/safety-requeue.ts';
import { ALL_NAMESPACES, listScopes, type WatchNamespaces } from '../src/core/watch-scope.ts';
import type {
  AppDeps,
  ClusterMembers,
  NewestObjects,
  ObjectVersions,
  OwnerLookup,
  OwnerResolver,
  ReadinessProbe,
  TokenReviews,
} from '../src/http/deps.ts';
import { UnavailableError } from '../src/http/errors.ts';
import { createRedisFleetStore } from '../src/metrics/redis-fleet-store.ts';
import { createMetrics, type Metrics } from '../src/metrics/registry.ts';
import { namedLease } from '../src/schedule/single-holder-lease.ts';
import { runSweepIfDue, type SweepListers, type SweepPods, type SweptJob } from '../src/schedule/sweep.ts';
import { isTargetKind } from '../src/schemas/kinds/api-group.ts';
import type { DependentsPort, EventDedupe, ObjectVersion, RequeueSchedule } from '../src/settle/ports.ts';
import { createSettle } from '../src/settle/settle.ts';
import { clusterFactsCacheOf } from '../src/step/cluster-facts.ts';
import type { ReconcileStep } from '../src/step/contract.ts';
import { capiClusterViewOf, clusterMemberViewOf, infrastructureTargetOf } from '../src/step/read-capi.ts';
import { asJobView, asPodView } from '../src/step/views.ts';

/**
 * The composition root of the handlers: turns the Redis and Kubernetes adapters into the small ports the
 * HTTP layer, settling and the sweep use (src/http/deps.ts, src/settle/ports.ts), translating the adapters'
 * `unknown` outcomes and outage errors into UnavailableError so the edge answers 503/429, never 500.
 */

export interface ComposeInput {
  config: Config;
  logger: Logger;
  redis: RedisAdapter;
  kube: KubeAdapter;
  step: ReconcileStep;
  clock: Clock;
  /** The app's metrics when the step reports on them too (functions/server.ts); built here otherwise. */
  metrics?: Metrics;
}

/** Builds the app's dependencies. */
export function composeAppDeps(input: ComposeInput): AppDeps {
  const { config, logger, redis, kube, clock } = input;
  const schedule = scheduleOf(redis, clock);
  const metrics =
    input.metrics ??
    createMetrics(
      createRedisFleetStore(redis.client, config.keyPrefix),
      (error) => logger.warn({ err: error }, 'metrics: fleet store unreachable'),
      () => kube.requestCounts(),
      { fleetMaxAgeMs: config.metricsFleetMaxAgeSeconds * 1000 },
    );
  const sweepLease = namedLease(redis, 'sweep');
  const listers = sweepListersOf(kube, config.watchNamespaces);
  const pods = sweepPodsOf(kube, config.watchNamespaces);
  const holder = `${hostname()}-${process.pid}`;
  const dedupe = dedupeOf(redis);
  const dependents = dependentsOf(redis);
  const newest = newestOf(redis);
  // The one place every step is run and settled, by every route and by the sweep (src/settle/settle.ts).
  const settle = createSettle({
    step: input.step,
    schedule,
    dedupe,
    dependents,
    newest,
    metrics,
    clock: clock.nowMs,
    measureRequests: (run) => kube.measureRequests(run),
  });
  return {
    config,
    logger,
    settle,
    schedule,
    dedupe,
    versions: objectVersionsOf(kube),
    newest,
    owners: ownerResolverOf(kube),
    clusterMembers: clusterMembersOf(kube),
    dependents,
    clusterFacts: clusterFactsCacheOf(redis.clusterFacts, { writes: true }),
    readiness: readinessOf(redis, kube),
    tokenReviews: tokenReviewsOf(kube),
    metrics,
    sweep: (_nowMs) =>
      runSweepIfDue({
        lease: sweepLease,
        holder,
        listers,
        pods,
        settle,
        schedule,
        dedupe,
        clock: clock.nowMs,
        logger,
        periodMs: config.syncPeriodSeconds * 1000,
        concurrency: config.tickConcurrency,
      }),
    clock: clock.nowMs,
  };
}

function redisDown(what: string, unknown: Unknown): UnavailableError {
  return new UnavailableError('redis', `${what}: ${unknown.cause.message}`, { cause: unknown.cause });
}

/** Runs a Kubernetes read; an outage (timeout, 5xx, 429, transport) becomes UnavailableError. */
async function kubeRead<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof KubeError && KUBE_ERROR_TABLE[error.code].outage) {
      throw new UnavailableError('api-server', error.message, {
        cause: error,
        throttled: error.code === 'TooManyRequests',
      });
    }
    throw error;
  }
}

function refOfMember(member: string): ObjectRef | undefined {
  const [kind, namespace, name] = member.split('/');
  return isTargetKind(kind) && namespace && name ? { kind, namespace, name } : undefined;
}

/** The schedule port over the adapter, which counts delays on the Redis server's clock. */
function scheduleOf(redis: RedisAdapter, clock: Clock): RequeueSchedule {
  return {
    async add(ref, dueAtMs) {
      const answer = await redis.schedule.add(refKey(ref), dueAtMs - clock.nowMs());
      if (answer.kind === 'unknown') throw redisDown('schedule requeue', answer);
    },
    async ensure(ref, dueAtMs) {
      const answer = await redis.schedule.ensure(refKey(ref), dueAtMs - clock.nowMs());
      if (answer.kind === 'unknown') throw redisDown('schedule requeue', answer);
    },
    async claimDue(_nowMs, limit, visibilityMs) {
      const answer = await redis.schedule.claimDue(limit, visibilityMs);
      if (answer.unknown !== undefined && answer.claims.length === 0)
        throw redisDown('claim requeues', answer.unknown);
      const claims: { ref: ObjectRef; token: string }[] = [];
      for (const claim of answer.claims) {
        const ref = refOfMember(claim.member);
        if (ref !== undefined) claims.push({ ref, token: String(claim.claimScore) });
        // A member no step can serve would come back every visibility period and take a batch slot:
        // acknowledge it without a next requeue, which drops it.
        else await redis.schedule.ack(claim, undefined);
      }
      return claims;
    },
    async complete(claim, nextDueAtMs) {
      const answer = await redis.schedule.ack(
        { member: refKey(claim.ref), claimScore: Number(claim.token) },
        nextDueAtMs === undefined ? undefined : nextDueAtMs - clock.nowMs(),
      );
      if (answer.kind === 'unknown') throw redisDown('acknowledge requeue', answer);
    },
  };
}

/** Dependencies in Redis (hash-tagged by the object waited for). */
function dependentsOf(redis: RedisAdapter): DependentsPort {
  // Longer than a wait's longest safety requeue (src/core/safety-requeue.ts), so a waiter is still
  // registered when its look comes; it registers again on each of its steps.
  const ttlSeconds = 2 * SAFETY_REQUEUE_MAX_SECONDS;
  return {
    async add(on, member) {
      const answer = await redis.dependents.add(on, member, ttlSeconds);
      if (answer.kind === 'unknown') throw redisDown('register dependent', answer);
    },
    async take(on, limit) {
      const answer = await redis.dependents.take(on, limit);
      if (answer.kind === 'unknown') throw redisDown('take dependents', answer);
      return answer.members.flatMap((member) => refOfMember(member) ?? []);
    },
  };
}

function dedupeOf(redis: RedisAdapter): EventDedupe {
  const marked = async (event: ObjectVersion, mark: VersionMark, what: string): Promise<boolean> => {
    const answer = await redis.versionMarked(event, mark);
    if (answer.kind === 'unknown') throw redisDown(what, answer);
    return answer.marked;
  };
  return {
    seen: (event) => marked(event, 'seen', 'check event seen'),
    async remember(event) {
      const answer = await redis.markEventSeen(event, EVENT_SEEN_TTL_SECONDS);
      if (answer.kind === 'unknown') throw redisDown('remember event', answer);
    },
    ownWrite: (event) => marked(event, 'own', 'check own write'),
    async stepRunning(object) {
      const answer = await redis.stepLockHeld(object);
      if (answer.kind === 'unknown') throw redisDown('check the step lock', answer);
      return answer.held;
    },
  };
}

/** One GET of one of our objects for its `uid@resourceVersion` and digest (reference-mode events). */
function objectVersionsOf(kube: KubeAdapter): ObjectVersions {
  return {
    async versionOf(ref) {
      const object = await kubeRead(() => kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name));
      return object === undefined
        ? undefined
        : {
            uid: object.metadata.uid,
            resourceVersion: object.metadata.resourceVersion,
            digest: objectDigest(object),
          };
    },
  };
}

/** The newest handled versions over Redis, kept as long as the dedupe markers. */
function newestOf(redis: RedisAdapter): NewestObjects {
  return {
    async newest(ref) {
      const answer = await redis.newest.get(ref);
      if (answer.kind === 'unknown') throw redisDown('read the newest version', answer);
      return answer.seen;
    },
    async remember(ref, seen) {
      const answer = await redis.newest.remember(ref, seen, EVENT_SEEN_TTL_SECONDS);
      if (answer.kind === 'unknown') throw redisDown('remember the newest version', answer);
    },
  };
}

function ownerFromLabels(meta: V1ObjectMeta | undefined): ObjectRef | undefined {
  const kind = meta?.labels?.[LABELS.ownerKind];
  const name = meta?.labels?.[LABELS.ownerName];
  return isTargetKind(kind) && name && meta?.namespace
    ? { kind, namespace: meta.namespace, name }
    : undefined;
}

function jobOwner(job: V1Job | undefined): OwnerLookup {
  if (job === undefined) return { found: false, reason: 'ObjectGone' };
  const ref = ownerFromLabels(job.metadata);
  return ref === undefined ? { found: false, reason: 'NotManaged' } : { found: true, ref };
}

/** A Job read live for an event about it: its owner, and why a step is not needed when none is. */
function jobEventOwner(job: V1Job | undefined): OwnerLookup {
  const lookup = jobOwner(job);
  if (!lookup.found || job === undefined) return lookup;
  const verdict = jobEventVerdict('update', asJobView(job));
  return verdict.matters ? lookup : { ...lookup, quiet: verdict.reason };
}

/** Owner lookups by live reads (DESIGN.md section 13): labels first, then the owning Job or plan target. */
function ownerResolverOf(kube: KubeAdapter): OwnerResolver {
  const { reader } = kube;
  const viaOwningJob = async (meta: V1ObjectMeta | undefined, namespace: string): Promise<OwnerLookup> => {
    const direct = ownerFromLabels(meta);
    if (direct !== undefined) return { found: true, ref: direct };
    const jobName =
      meta?.ownerReferences?.find((ref) => ref.kind === 'Job')?.name ?? meta?.labels?.['job-name'];
    if (jobName === undefined) return { found: false, reason: 'NotManaged' };
    return jobOwner(await kubeRead(() => reader.getJob(namespace, jobName)));
  };
  return {
    async resolve(owned) {
      switch (owned.kind) {
        case 'Job':
          return jobEventOwner(await kubeRead(() => reader.getJob(owned.namespace, owned.name)));
        case 'Pod': {
          const pod = await kubeRead(() => reader.getPod(owned.namespace, owned.name));
          if (pod === undefined) return { found: false, reason: 'ObjectGone' };
          const lookup = await viaOwningJob(pod.metadata, owned.namespace);
          if (!lookup.found) return lookup;
          const heldPod = heldPodOf(pod.metadata);
          if (heldPod !== undefined) return { ...lookup, heldPod };
          // Read live, the pod exists: only its state can matter (a gone pod answered ObjectGone above).
          const verdict = podEventVerdict('update', asPodView(pod));
          return verdict.matters ? lookup : { ...lookup, quiet: verdict.reason };
        }
        case 'TerraformPlan': {
          const plan = await kubeRead(() =>
            reader.getCustomObject('TerraformPlan', owned.namespace, owned.name),
          );
          if (plan === undefined) return { found: false, reason: 'ObjectGone' };
          const target = (plan.spec as { targetRef?: { kind?: string; name?: string } } | undefined)
            ?.targetRef;
          return isTargetKind(target?.kind) && target.name
            ? { found: true, ref: { kind: target.kind, namespace: owned.namespace, name: target.name } }
            : { found: false, reason: 'OwnerNotOurs' };
        }
        case 'Machine':
        case 'MachinePool': {
          const { kind } = owned;
          const owner = await kubeRead(() => reader.getCapiObject(kind, owned.namespace, owned.name));
          if (owner === undefined) return { found: false, reason: 'ObjectGone' };
          const ref = infrastructureTargetOf(kind, owned.namespace, owner);
          return ref === undefined ? { found: false, reason: 'OwnerNotOurs' } : { found: true, ref };
        }
      }
    },
  };
}

/**
 * The objects of a Cluster API cluster a change of its Cluster must reach (DESIGN.md section 13): the
 * Cluster and the objects labelled with its name, read live (one GET, one list per kind).
 */
function clusterMembersOf(kube: KubeAdapter): ClusterMembers {
  const { reader } = kube;
  return {
    async toWake({ namespace, name }) {
      const cluster = await kubeRead(() => reader.getCapiObject('Cluster', namespace, name));
      if (cluster === undefined) return { found: false, reason: 'ObjectGone' };
      const selector = { namespace, labelSelector: { [LABELS.clusterName]: name } };
      const lists = await Promise.all(
        OBJECT_KINDS.map((kind) => kubeRead(() => reader.listCustomObjects(kind, selector))),
      );
      const members = OBJECT_KINDS.flatMap((kind, index) =>
        (lists[index] ?? []).map((object) =>
          clusterMemberViewOf({ kind, namespace, name: object.metadata.name }, object),
        ),
      );
      return { found: true, refs: clusterMembersToWake(capiClusterViewOf(cluster), members) };
    },
  };
}

/** TokenReviews for the handlers' auth; an API server outage is UnavailableError (503, Retry-After). */
function tokenReviewsOf(kube: KubeAdapter): TokenReviews {
  return { review: (token, audiences) => kubeRead(() => kube.tokenReviews.review(token, audiences)) };
}

/**
 * One list per watched namespace (one cluster-wide list when all are watched), concatenated: the sweep
 * never reads, so never steps, an object outside `CAPTF_WATCH_NAMESPACES`.
 */
async function listAcross<T>(
  watched: WatchNamespaces,
  list: (namespace: string | undefined) => Promise<T[]>,
): Promise<T[]> {
  return (await Promise.all(listScopes(watched).map((namespace) => kubeRead(() => list(namespace))))).flat();
}

/** The sweep's live reads, in the watched namespaces. */
export function sweepListersOf(kube: KubeAdapter, watched: WatchNamespaces = ALL_NAMESPACES): SweepListers {
  const { reader } = kube;
  const managed = { labelSelector: { [LABELS.managed]: 'true' } };
  return {
    async listObjects() {
      const lists = await Promise.all(
        OBJECT_KINDS.map((kind) =>
          listAcross(watched, (namespace) =>
            reader.listCustomObjects(kind, namespace === undefined ? {} : { namespace }),
          ),
        ),
      );
      return lists.flatMap((objects, index) =>
        objects.flatMap((object) => {
          const kind = OBJECT_KINDS[index];
          const { namespace, name, uid, resourceVersion } = object.metadata;
          if (kind === undefined || !namespace) return [];
          const ref = { kind, namespace, name };
          return [uid && resourceVersion ? { ref, version: { uid, resourceVersion } } : { ref }];
        }),
      );
    },
    async listJobs() {
      const jobs = await listAcross(watched, (namespace) =>
        reader.listJobs(namespace === undefined ? managed : { ...managed, namespace }),
      );
      return jobs.map((job): SweptJob => {
        return {
          namespace: job.metadata?.namespace ?? '',
          name: job.metadata?.name ?? '',
          owner: ownerFromLabels(job.metadata),
          finished: finishedCondition(asJobView(job)) !== undefined,
          bookkept: job.metadata?.annotations?.[ANNOTATIONS.bookkept] !== undefined,
          ...(job.metadata?.uid ? { uid: job.metadata.uid } : {}),
          deleting: job.metadata?.deletionTimestamp !== undefined,
        };
      });
    },
  };
}

/**
 * The sweep's release of our pod finalizer from pods whose Job is gone (src/core/pod-release.ts), in the
 * watched namespaces.
 */
export function sweepPodsOf(kube: KubeAdapter, watched: WatchNamespaces = ALL_NAMESPACES): SweepPods {
  const { reader, writer } = kube;
  const managed = { labelSelector: { [LABELS.managed]: 'true' } };
  return {
    async listPods() {
      const pods = await listAcross(watched, (namespace) =>
        reader.listPods(namespace === undefined ? managed : { ...managed, namespace }),
      );
      return pods.flatMap((pod) => {
        const { name, namespace } = pod.metadata ?? {};
        if (!name || !namespace) return [];
        return [{ namespace, name, view: asPodView(pod) }];
      });
    },
    async releasePod(pod) {
      await kubeRead(() => writer.removePodFinalizer(pod.namespace, pod.name, POD_RESULT_FINALIZER));
    },
    async deletePod(pod) {
      const { uid = '', resourceVersion = '' } = pod.view.metadata;
      try {
        const deleted = await kubeRead(() =>
          writer.deletePod(pod.namespace, pod.name, { uid, resourceVersion }),
        );
        return deleted === 'deleted';
      } catch (error) {
        // Changed since the list (a step released or deleted it, the kubelet wrote): judged again next time.
        if (isKubeError(error, 'Conflict')) return false;
        throw error;
      }
    },
  };
}

/** `/readyz`: a Redis PING and a cheap API server read; never throws. */
function readinessOf(redis: RedisAdapter, kube: KubeAdapter): ReadinessProbe {
  return async () => {
    const pong = await redis.ping();
    let apiServer: { ok: true } | { ok: false; message: string } = { ok: true };
    try {
      await kube.reader.getJob('default', 'captf-readyz-probe');
    } catch (error) {
      apiServer = {
        ok: false,
        message: error instanceof Error ? error.message.slice(0, 200) : 'unreachable',
      };
    }
    return {
      redis: pong.kind === 'pong' ? { ok: true } : { ok: false, message: pong.cause.message.slice(0, 200) },
      apiServer,
    };
  };
}
