import type { RedisClient } from './client.ts';
import type { KeyLayout } from './keys.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * The cached facts of each cluster (DESIGN.md section 5 step 2; issue 22): what a machine's or pool's
 * decision reads of its cluster, kept per namespace and cluster name in two parts, `owning` (the
 * TerraformCluster carrying the cluster label) and `capi` (the Cluster API Cluster of that name), each with
 * the version it came from. A hint: every entry expires, a lost one costs the live reads, never a result.
 * The payload is the caller's (src/step/cluster-facts.ts encodes it); this module keeps the version rule
 * (the `captfClusterFact` script): never an older version of the same object over a newer one, and an
 * absence only into an empty key.
 */

/** The two parts of a cluster's facts. */
export type ClusterFactPart = 'owning' | 'capi';

/** One stored fact: the object's uid and resourceVersion (undefined uid: found absent) and its payload. */
export interface StoredFact {
  uid: string | undefined;
  resourceVersion: string;
  /** '' while only the version is known (a step wrote the object and did not read it back). */
  payload: string;
}

export type ClusterFactsRead =
  | { kind: 'found'; facts: Partial<Record<ClusterFactPart, StoredFact>> }
  | Unknown;
export type ClusterFactWrite = { kind: 'stored' } | { kind: 'kept' } | Unknown;

/** The uid a found-absent fact is stored under. */
const ABSENT = '-';

const PARTS: readonly ClusterFactPart[] = ['owning', 'capi'];

function decode(value: string | null | undefined): StoredFact | undefined {
  if (!value) return undefined;
  const first = value.indexOf(' ');
  const second = value.indexOf(' ', first + 1);
  if (first <= 0 || second <= first) return undefined;
  const uid = value.slice(0, first);
  return {
    uid: uid === ABSENT ? undefined : uid,
    resourceVersion: value.slice(first + 1, second),
    payload: value.slice(second + 1),
  };
}

/** The cached cluster facts over one client and key layout. */
export class ClusterFactsStore {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  /** Both parts of the facts of cluster `clusterName` in `namespace` (one MGET); a part absent when unknown. */
  async get(namespace: string, clusterName: string): Promise<ClusterFactsRead> {
    const keys = PARTS.map((part) => this.#keys.clusterFacts(namespace, clusterName, part));
    const answer = await attempt(() => this.#client.mget(...keys));
    if (answer.kind === 'unknown') return answer;
    const facts: Partial<Record<ClusterFactPart, StoredFact>> = {};
    PARTS.forEach((part, index) => {
      const fact = decode(answer.reply[index]);
      if (fact !== undefined) facts[part] = fact;
    });
    return { kind: 'found', facts };
  }

  /** Stores `fact` for `ttlSeconds` unless the version rule keeps the stored one (atomic). */
  async put(
    namespace: string,
    clusterName: string,
    part: ClusterFactPart,
    fact: StoredFact,
    ttlSeconds: number,
  ): Promise<ClusterFactWrite> {
    const answer = await attempt(() =>
      callScript(this.#client, 'captfClusterFact', [
        this.#keys.clusterFacts(namespace, clusterName, part),
        fact.uid ?? ABSENT,
        fact.uid === undefined ? '0' : fact.resourceVersion,
        fact.payload,
        ttlSeconds,
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return answer.reply === 1 ? { kind: 'stored' } : { kind: 'kept' };
  }

  /** Forgets one part (a deletion, or an event without the object's copy). */
  async drop(
    namespace: string,
    clusterName: string,
    part: ClusterFactPart,
  ): Promise<{ kind: 'done' } | Unknown> {
    const answer = await attempt(() =>
      this.#client.del(this.#keys.clusterFacts(namespace, clusterName, part)),
    );
    return answer.kind === 'unknown' ? answer : { kind: 'done' };
  }
}
