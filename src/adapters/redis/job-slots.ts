import type { RedisClient } from './client.ts';
import type { KeyLayout } from './keys.ts';
import { replyArray, replyNumber, replyString } from './reply.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * Job slots (DESIGN.md section 5 step 5): active Jobs per installation (`--max-active-jobs`) and per
 * Cluster API cluster (`--cluster-max-active-jobs`). Each slot is a sorted-set entry `ns/job` scored with
 * its expiry, so a holder that crashed without releasing frees its slot when the expiry passes. Limits are
 * the caller's (drift and refresh pass 80 % of a limit).
 */

/** Which slots a Job takes: the installation's, and its cluster's when it belongs to one. */
export interface JobSlotScope {
  namespace: string;
  job: string;
  clusterName?: string;
}

export interface JobSlotLimits {
  installation: number;
  /** Ignored when the scope has no cluster. */
  cluster: number;
}

export type JobSlotTake =
  /** The Job holds its slot(s) (also when it already held them: expiry refreshed, limits not re-checked). */
  | { kind: 'acquired' }
  /** No slot taken: `scope` is at `active` ≥ `limit` (`WaitingForJobSlot`). */
  | { kind: 'full'; scope: 'installation' | 'cluster'; active: number; limit: number }
  | Unknown;
export type JobSlotRenew = { kind: 'renewed' } | { kind: 'lost' } | Unknown;
export type JobSlotRelease = { kind: 'released' } | Unknown;
/** Live slots now (expired ones dropped). `cluster` is undefined when no cluster was asked for. */
export type JobSlotUsage = { kind: 'counted'; installation: number; cluster: number | undefined } | Unknown;

/** Job-slot operations over one client and key layout. */
export class JobSlots {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  #keysOf(namespace: string, clusterName: string | undefined): string[] {
    const installation = this.#keys.installationSlots();
    return clusterName === undefined
      ? [installation]
      : [installation, this.#keys.clusterSlots(namespace, clusterName)];
  }

  /** Takes the Job's slot(s) for `ttlSeconds` only if every scope is below its limit, atomically. */
  async take(scope: JobSlotScope, limits: JobSlotLimits, ttlSeconds: number): Promise<JobSlotTake> {
    const keys = this.#keysOf(scope.namespace, scope.clusterName);
    const limitArgs =
      scope.clusterName === undefined ? [limits.installation] : [limits.installation, limits.cluster];
    const answer = await attempt(() =>
      callScript(this.#client, 'captfSlotTake', [
        keys.length,
        ...keys,
        `${scope.namespace}/${scope.job}`,
        ttlSeconds * 1000,
        ...limitArgs,
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    const items = replyArray(answer.reply, 'captfSlotTake');
    if (replyString(items, 0, 'captfSlotTake') === 'acquired') return { kind: 'acquired' };
    const full = replyNumber(items, 1, 'captfSlotTake') === 1 ? 'installation' : 'cluster';
    return {
      kind: 'full',
      scope: full,
      active: replyNumber(items, 2, 'captfSlotTake'),
      limit: full === 'installation' ? limits.installation : limits.cluster,
    };
  }

  /** Pushes the expiry of the Job's slot(s) to `ttlSeconds` from now; `lost` when it held none. */
  async renew(scope: JobSlotScope, ttlSeconds: number): Promise<JobSlotRenew> {
    const keys = this.#keysOf(scope.namespace, scope.clusterName);
    const answer = await attempt(() =>
      callScript(this.#client, 'captfSlotRenew', [
        keys.length,
        ...keys,
        `${scope.namespace}/${scope.job}`,
        ttlSeconds * 1000,
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return Number(answer.reply) > 0 ? { kind: 'renewed' } : { kind: 'lost' };
  }

  /** Frees the Job's slot(s); releasing a slot not held is not an error. */
  async release(scope: JobSlotScope): Promise<JobSlotRelease> {
    const member = `${scope.namespace}/${scope.job}`;
    const keys = this.#keysOf(scope.namespace, scope.clusterName);
    const answer = await attempt(async () => {
      const transaction = this.#client.multi();
      for (const key of keys) transaction.zrem(key, member);
      return transaction.exec();
    });
    return answer.kind === 'unknown' ? answer : { kind: 'released' };
  }

  /** Live slot counts of the installation and, when given, one cluster. */
  async usage(cluster?: { namespace: string; name: string }): Promise<JobSlotUsage> {
    const keys = this.#keysOf(cluster?.namespace ?? '', cluster?.name);
    const answer = await attempt(() => callScript(this.#client, 'captfSlotCount', [keys.length, ...keys]));
    if (answer.kind === 'unknown') return answer;
    const items = replyArray(answer.reply, 'captfSlotCount');
    return {
      kind: 'counted',
      installation: replyNumber(items, 0, 'captfSlotCount'),
      cluster: cluster === undefined ? undefined : replyNumber(items, 1, 'captfSlotCount'),
    };
  }
}
