import { z } from 'zod';
import type { ClusterFactPart, ClusterFactsStore, StoredFact } from '../adapters/redis/cluster-facts.ts';
import type { CapiClusterView } from '../core/cluster-api.ts';
import type { ClusterFacts, Fact, FactVersion } from '../core/cluster-facts.ts';
import type { OwningCluster } from '../core/snapshot.ts';
import { EVENT_SAFETY_SECONDS } from '../core/wait-table.ts';
import type { JobsPolicy } from '../schemas/kinds/jobs-policy.ts';

/**
 * The cluster facts cache as the step and `/events` use it (DESIGN.md section 5 step 2; issue 22): a
 * member step reads it before its cluster reads and reads live only the parts it lacks; every live read
 * and every Resource-mode event of a TerraformCluster or Cluster fills it. Best effort both ways: Redis
 * unavailable reads as nothing cached and a lost write as nothing written, so the cache never fails a
 * step. An entry lives as long as a wait's safety requeue (EVENT_SAFETY_SECONDS): a lost event leaves a
 * member behind by at most that long.
 */

/** The cache a step or an event handler reads and writes. */
export interface ClusterFactsCache {
  /** The cached parts of `clusterName`'s facts in `namespace`; none when Redis does not answer. */
  read(namespace: string, clusterName: string): Promise<ClusterFacts>;
  /** Stores the parts given, each unless a newer version of it is stored. */
  remember(namespace: string, clusterName: string, facts: ClusterFacts): Promise<void>;
  /**
   * Records that the owning TerraformCluster is at `version` at least, content unknown (its own step wrote
   * it): older facts stop being read, and the next member reads live until that version's event fills it.
   */
  outdate(namespace: string, clusterName: string, version: FactVersion): Promise<void>;
  /** Forgets one part (a deletion, or an event without the object's copy). */
  forget(namespace: string, clusterName: string, part: ClusterFactPart): Promise<void>;
}

/** No cache: every read live, nothing kept (the kubectl plugin, tools). */
export const NO_CLUSTER_FACTS: ClusterFactsCache = {
  read: async () => ({}),
  remember: async () => undefined,
  outdate: async () => undefined,
  forget: async () => undefined,
};

const OwningViewSchema = z.object({
  name: z.string(),
  ready: z.boolean(),
  defaultsJobs: z.record(z.string(), z.unknown()).optional(),
  exports: z.record(z.string(), z.unknown()).optional(),
  unreadable: z.array(z.string()).optional(),
});

const CapiViewSchema = z.object({ paused: z.boolean(), infrastructureProvisioned: z.boolean() });

function storedOf<V>(fact: Fact<V>): StoredFact {
  return fact.version === undefined
    ? { uid: undefined, resourceVersion: '0', payload: 'absent' }
    : { ...fact.version, payload: JSON.stringify(fact.view ?? null) };
}

/** A stored fact as the step reads it; undefined when only its version is known or it does not parse. */
function factOf<V>(
  stored: StoredFact | undefined,
  parse: (value: unknown) => V | undefined,
): Fact<V> | undefined {
  if (stored === undefined) return undefined;
  if (stored.uid === undefined) return { view: undefined, version: undefined };
  if (stored.payload === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(stored.payload);
  } catch {
    return undefined;
  }
  const view = parse(value);
  return view === undefined
    ? undefined
    : { view, version: { uid: stored.uid, resourceVersion: stored.resourceVersion } };
}

function owningViewOf(value: unknown): OwningCluster | undefined {
  const parsed = OwningViewSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const { defaultsJobs, ...rest } = parsed.data;
  // Written by this module from a parsed spec (src/step/read.ts); the cache holds nothing else.
  return { ...rest, ...(defaultsJobs ? { defaultsJobs: defaultsJobs as JobsPolicy } : {}) };
}

function capiViewOf(value: unknown): CapiClusterView | undefined {
  const parsed = CapiViewSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The cache over the Redis store. `writes: false` reads only (a dry run changes nothing, not even a
 * hint).
 */
export function clusterFactsCacheOf(
  store: ClusterFactsStore,
  options: { writes: boolean },
): ClusterFactsCache {
  const ttl = EVENT_SAFETY_SECONDS;
  return {
    read: async (namespace, clusterName) => {
      const answer = await store.get(namespace, clusterName);
      if (answer.kind === 'unknown') return {};
      const owning = factOf(answer.facts.owning, owningViewOf);
      const capi = factOf(answer.facts.capi, capiViewOf);
      return { ...(owning ? { owning } : {}), ...(capi ? { capi } : {}) };
    },
    remember: async (namespace, clusterName, facts) => {
      if (!options.writes) return;
      await Promise.all([
        facts.owning ? store.put(namespace, clusterName, 'owning', storedOf(facts.owning), ttl) : undefined,
        facts.capi ? store.put(namespace, clusterName, 'capi', storedOf(facts.capi), ttl) : undefined,
      ]);
    },
    outdate: async (namespace, clusterName, version) => {
      if (!options.writes) return;
      await store.put(namespace, clusterName, 'owning', { ...version, payload: '' }, ttl);
    },
    forget: async (namespace, clusterName, part) => {
      if (!options.writes) return;
      await store.drop(namespace, clusterName, part);
    },
  };
}
