import type { RedisClient } from './client.ts';
import type { KeyLayout, ObjectId } from './keys.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * The newest version of each of our objects that `/events` handled (DESIGN.md section 13): its uid,
 * resourceVersion and the digest of what a step reads of it (src/core/event-relevance.ts), so an event's
 * copy tells a stale or unchanged version from a new one without a read. A hint: a lost key costs one
 * step, never a result. The digest is '' while only the version is known (the one a step's write left,
 * filled in when that write's own event arrives).
 */
export interface NewestSeen {
  uid: string;
  resourceVersion: string;
  digest: string;
}

export type NewestRead = { kind: 'found'; seen: NewestSeen | undefined } | Unknown;
export type NewestWrite = { kind: 'done' } | Unknown;

/** The newest handled versions over one client and key layout. */
export class NewestVersions {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  /** The newest version handled of `object`; undefined when none is remembered. */
  async get(object: ObjectId): Promise<NewestRead> {
    const answer = await attempt(() => this.#client.get(this.#keys.newest(object)));
    if (answer.kind === 'unknown') return answer;
    const [uid, resourceVersion, digest] = (answer.reply ?? '').split(' ');
    return {
      kind: 'found',
      seen: uid && resourceVersion ? { uid, resourceVersion, digest: digest ?? '' } : undefined,
    };
  }

  /** Remembers `seen` for `ttlSeconds` unless a newer version is remembered already (atomic). */
  async remember(object: ObjectId, seen: NewestSeen, ttlSeconds: number): Promise<NewestWrite> {
    const answer = await attempt(() =>
      callScript(this.#client, 'captfNewestSeen', [
        this.#keys.newest(object),
        seen.uid,
        seen.resourceVersion,
        seen.digest,
        ttlSeconds,
      ]),
    );
    return answer.kind === 'unknown' ? answer : { kind: 'done' };
  }
}
