import type { RedisClient } from './client.ts';
import type { KeyLayout, ObjectId } from './keys.ts';
import { objectIdString } from './keys.ts';
import { replyArray } from './reply.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * Who waits for whom (DESIGN.md section 6: "dependencies 30 s"): a machine that waits for its cluster's
 * infrastructure registers under the cluster; when the cluster's step records it ready, the waiting
 * members are taken in one atomic call and looked at at once instead of at their next 30 s requeue. A
 * hint only: the requeue stays the guarantee, and a lost set costs latency, never a result.
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

  /** Takes (and forgets) every member waiting for `on`, atomically. */
  async take(on: ObjectId): Promise<DependentTake> {
    const answer = await attempt(() =>
      callScript(this.#client, 'captfDependentsTake', [this.#keys.dependents(on)]),
    );
    if (answer.kind === 'unknown') return answer;
    return {
      kind: 'taken',
      members: replyArray(answer.reply, 'captfDependentsTake').map((member) => String(member)),
    };
  }
}
