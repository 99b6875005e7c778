import type { RedisClient } from './client.ts';
import type { KeyLayout, ObjectId } from './keys.ts';
import { objectIdString } from './keys.ts';
import { replyArray } from './reply.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * Who waits for what (DESIGN.md section 6; src/core/wake.ts): a machine that waits for its cluster's
 * infrastructure registers under the cluster, an object that misses a Secret under the Secret, a lease or
 * slot wait under its lease group or slot set; the step or event that ends the wait takes the waiting
 * members in one atomic call and they are looked at at once instead of at their safety requeue. A hint
 * only: the requeue stays the guarantee, and a lost set costs latency, never a result.
 */

export type DependentAdd = { kind: 'added' } | Unknown;
export type DependentTake = { kind: 'taken'; members: string[] } | Unknown;

/** The dependents of objects over one client and key layout. */
export class Dependents {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  /** Registers `member` (`kind/ns/name`) as waiting for `on`, for `ttlSeconds` from now (refreshed). */
  async add(on: ObjectId, member: ObjectId, ttlSeconds: number): Promise<DependentAdd> {
    const key = this.#keys.dependents(on);
    const answer = await attempt(() =>
      this.#client.multi().sadd(key, objectIdString(member)).expire(key, ttlSeconds).exec(),
    );
    return answer.kind === 'unknown' ? answer : { kind: 'added' };
  }

  /**
   * Takes (and forgets) the members waiting for `on`, atomically: every one, or at most `limit` of them
   * (any `limit`, SPOP's choice), the rest staying registered.
   */
  async take(on: ObjectId, limit?: number): Promise<DependentTake> {
    const key = this.#keys.dependents(on);
    const answer = await attempt(() =>
      limit === undefined
        ? callScript(this.#client, 'captfDependentsTake', [key])
        : this.#client.spop(key, limit),
    );
    if (answer.kind === 'unknown') return answer;
    return {
      kind: 'taken',
      members: replyArray(answer.reply, 'captfDependentsTake').map((member) => String(member)),
    };
  }
}
