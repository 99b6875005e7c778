import type { RedisClient } from './client.ts';
import type { KeyLayout } from './keys.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * The runner identities a Job-creating step found complete (DESIGN.md section 15, the runner identity): per
 * object uid, the digest of the identity that was checked (src/core/runner-identity.ts). A hint that saves
 * the identity's two reads before a Job: a lost key costs them once, never a result. Bookkeeping forgets it
 * when a run does not succeed and the finalize step when the object goes, so a RoleBinding or Lease someone
 * deleted is checked and put back at the next start; the TTL bounds how long anything else goes unchecked.
 */
export type IdentityCheckRead = { kind: 'found'; digest: string | undefined } | Unknown;
export type IdentityCheckWrite = { kind: 'done' } | Unknown;

/** The remembered identity checks over one client and key layout. */
export class IdentityChecks {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  /** The digest of the identity last found complete for the object `uid`; undefined when none. */
  async get(uid: string): Promise<IdentityCheckRead> {
    const answer = await attempt(() => this.#client.get(this.#keys.identityCheck(uid)));
    if (answer.kind === 'unknown') return answer;
    return { kind: 'found', digest: answer.reply ?? undefined };
  }

  /** Remembers that the identity of digest `digest` was found complete, for `ttlSeconds`. */
  async remember(uid: string, digest: string, ttlSeconds: number): Promise<IdentityCheckWrite> {
    const answer = await attempt(() =>
      this.#client.set(this.#keys.identityCheck(uid), digest, 'EX', ttlSeconds),
    );
    return answer.kind === 'unknown' ? answer : { kind: 'done' };
  }

  /** Forgets the object's check: its next Job-creating step reads the identity again. */
  async forget(uid: string): Promise<IdentityCheckWrite> {
    const answer = await attempt(() => this.#client.del(this.#keys.identityCheck(uid)));
    return answer.kind === 'unknown' ? answer : { kind: 'done' };
  }
}
