import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { QuietReason, SeenObject } from '../core/event-relevance.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import type { HeldPod } from '../core/pod-release.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { SweepReport } from '../schedule/sweep.ts';
import type { DependentsPort, EventDedupe, NewestHandled, RequeueSchedule } from '../settle/ports.ts';
import type { Settle } from '../settle/settle.ts';
import type { ClusterFactsCache } from '../step/cluster-facts.ts';

/**
 * Everything `buildApp` needs, injected (STYLE.md habit 7): no module reads env, clock or a global client.
 * Ports throw UnavailableError (./errors.ts) on a Redis or API server outage.
 */

/**
 * Objects the `/events` route may have to map to their owner by a live read (DESIGN.md section 13): ours
 * (Jobs, Pods, plans) to the object they belong to, and Cluster API's Machines and MachinePools to the object
 * of ours their infrastructure reference names (they hold its owner, version and bootstrap data).
 */
export type OwnedKind = 'Job' | 'Pod' | 'TerraformPlan' | 'Machine' | 'MachinePool';

/** An owned object named by an event that carried no owner labels (reference mode). */
export interface OwnedObject {
  kind: OwnedKind;
  namespace: string;
  name: string;
}

/**
 * The owner lookup's answer: our object (for a pod read live that is being deleted with our finalizer, that
 * pod too: src/core/pod-release.ts `heldPodOf`; for a Job or pod whose live copy changes nothing a step
 * reads, why: src/core/event-relevance.ts), or a literal reason why there is none.
 */
export type OwnerLookup =
  | { found: true; ref: ObjectRef; heldPod?: HeldPod; quiet?: QuietReason }
  | { found: false; reason: 'ObjectGone' | 'NotManaged' | 'OwnerNotOurs' };

/**
 * Reads an owned object live and returns its owner: from the `captf.io/owner-kind`/`owner-name` labels, else
 * (Pods) through the Job they belong to.
 */
export interface OwnerResolver {
  resolve(owned: OwnedObject): Promise<OwnerLookup>;
}

/** A Cluster API Cluster named by an event. */
export interface NamedCluster {
  namespace: string;
  name: string;
}

/** The objects of a Cluster API cluster to look at now, or why there are none. */
export type ClusterWake = { found: true; refs: ObjectRef[] } | { found: false; reason: 'ObjectGone' };

/**
 * Reads a Cluster API Cluster and the objects of ours labelled with its name, live, and answers those whose
 * status no longer matches the Cluster's pause or provisioned infrastructure (src/core/cluster-api.ts
 * `clusterMembersToWake`).
 */
export interface ClusterMembers {
  toWake(cluster: NamedCluster): Promise<ClusterWake>;
}

/**
 * Reads the current version of one of our objects (one GET): what a reference-mode event, which carries
 * neither uid nor resourceVersion, is deduplicated and judged by (its uid, resourceVersion and content
 * digest, src/core/event-relevance.ts). Undefined when the object is gone.
 */
export interface ObjectVersions {
  versionOf(ref: ObjectRef): Promise<SeenObject | undefined>;
}

/**
 * The newest version handled (src/settle/ports.ts `NewestHandled`, which every settled step records), read
 * by `/events`, and kept for each Machine and MachinePool too (Redis, src/adapters/redis/newest-seen.ts):
 * what tells a stale or unchanged event from a new one without a read. `remember` keeps only a newer one.
 */
export interface NewestObjects extends NewestHandled {
  newest(object: WatchedObject): Promise<SeenObject | undefined>;
  remember(object: WatchedObject, seen: SeenObject): Promise<void>;
}

/** One watched object by kind, namespace and name: ours, or a Machine or MachinePool of Cluster API. */
export interface WatchedObject {
  kind: string;
  namespace: string;
  name: string;
}

/** Nothing remembered: every event that is not a duplicate reaches its step (tools, benches). */
export const NO_NEWEST: NewestObjects = {
  newest: async () => undefined,
  remember: async () => undefined,
};

/** One dependency's readiness. */
export type DependencyCheck = { ok: true } | { ok: false; message: string };

/** `/readyz`: Redis and the API server reachable (DESIGN.md section 13). Must not throw. */
export type ReadinessProbe = () => Promise<{ redis: DependencyCheck; apiServer: DependencyCheck }>;

/** What a TokenReview said about a bearer token (src/adapters/kube/token-review.ts). */
export interface TokenReviewAnswer {
  authenticated: boolean;
  username?: string;
  /** The asked audiences the token is valid for. */
  audiences: string[];
  error?: string;
}

/**
 * TokenReviews for the handlers' auth (src/http/auth.ts). Throws UnavailableError when the API server cannot
 * answer (the caller then gets 503 with Retry-After and sends again); a refused token is an answer.
 */
export interface TokenReviews {
  review(token: string, audiences: readonly string[]): Promise<TokenReviewAnswer>;
}

/** The configuration the HTTP layer reads. */
export type AppConfig = Pick<
  Config,
  'auth' | 'bodyLimitBytes' | 'tickBudgetMs' | 'tickConcurrency' | 'tickBatch' | 'watchNamespaces'
> &
  Partial<Pick<Config, 'metricsAuth'>>;

export interface AppDeps {
  config: AppConfig;
  logger: Logger;
  /** Runs and settles one step (src/settle/settle.ts): every route's one way to reconcile. */
  settle: Settle;
  schedule: RequeueSchedule;
  dedupe: EventDedupe;
  versions: ObjectVersions;
  newest: NewestObjects;
  owners: OwnerResolver;
  clusterMembers: ClusterMembers;
  /** Who waits for what (src/core/wake.ts): a Secret's event takes its waiters. */
  dependents: DependentsPort;
  /**
   * The cluster facts cache (src/step/cluster-facts.ts): a TerraformCluster's or Cluster's event updates
   * it before anything it wakes runs. Absent: nothing cached (tools, benches).
   */
  clusterFacts?: Pick<ClusterFactsCache, 'remember' | 'forget'>;
  readiness: ReadinessProbe;
  /** Checks the bearer tokens that are not the static one; required when `config.auth.oidc` is set. */
  tokenReviews?: TokenReviews;
  metrics: Metrics;
  /** Runs the sweep when due (src/schedule/sweep.ts `runSweepIfDue` bound to its deps). */
  sweep: (nowMs: number) => Promise<SweepReport>;
  /** Milliseconds since the epoch. */
  clock: () => number;
}
