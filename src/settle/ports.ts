import type { SeenObject } from '../core/event-relevance.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import type { WakeSource } from '../core/wake.ts';

/**
 * What settling a step, the tick runner and the sweep need from Redis (DESIGN.md section 8), as small
 * interfaces; the composition root implements them over the Redis adapter (functions/compose.ts). Every
 * method throws UnavailableError (src/http/errors.ts) when Redis is down.
 */

/** A claimed due requeue; `token` is the adapter's proof of the claim (e.g. the claimed score). */
export interface Claim {
  ref: ObjectRef;
  token: string;
}

/**
 * The requeue schedule: a sorted set of `kind/namespace/name` by due time in ms. `add` keeps the earliest due
 * time (ZADD LT semantics, like client-go's AddAfter). A claim hides its member for `visibilityMs`; a claim
 * never completed reappears when that runs out (a crashed `/tick` loses nothing).
 */
export interface RequeueSchedule {
  add(ref: ObjectRef, dueAtMs: number): Promise<void>;
  /**
   * Gives `ref` a requeue at `dueAtMs` only when it has none (ZADD NX): what the sweep needs to make sure
   * every object is looked at again (DESIGN.md section 8) without stepping a resting fleet every period.
   */
  ensure(ref: ObjectRef, dueAtMs: number): Promise<void>;
  /** Claims up to `limit` members due at or before `nowMs`, oldest first. */
  claimDue(nowMs: number, limit: number, visibilityMs: number): Promise<Claim[]>;
  /**
   * Ends a claim atomically: the member is due again at `nextDueAtMs` (earliest of that and any `add` made
   * meanwhile), or removed when `nextDueAtMs` is undefined and nothing was added meanwhile.
   */
  complete(claim: Claim, nextDueAtMs: number | undefined): Promise<void>;
}

/**
 * Event dedupe by `uid@resourceVersion` (DESIGN.md section 8): one cheap check per event during a replay
 * storm, and the echo of a step's own write dropped before any step (section 2). `remember` is called only
 * after a step handled that version, so a failed delivery is not remembered.
 */
export interface EventDedupe {
  seen(event: ObjectVersion): Promise<boolean>;
  remember(event: ObjectVersion): Promise<void>;
  /**
   * Whether a step wrote this version of its object (marked by the step as it wrote it, section 8): the
   * Resource-mode event of exactly this version is that write's echo. Not a record of anything handled.
   */
  ownWrite(event: ObjectVersion): Promise<boolean>;
  /**
   * Whether a step of the object runs now (it holds the step lock): the event of a write that step makes
   * may arrive before the write is marked as its own (src/http/running-step.ts).
   */
  stepRunning(object: ObjectRef): Promise<boolean>;
}

/** One version of one object: the dedupe key `uid@resourceVersion`. */
export interface ObjectVersion {
  uid: string;
  resourceVersion: string;
}

/**
 * Who waits for whom (DESIGN.md section 6): a hint that lets a dependency's step wake the objects waiting
 * for it; their requeues stay the guarantee.
 */
export interface DependentsPort {
  /** Registers `member` as waiting for `on`. */
  add(on: WakeSource, member: ObjectRef): Promise<void>;
  /** Takes (and forgets) the objects waiting for `on`: every one, or at most `limit` of them. */
  take(on: WakeSource, limit?: number): Promise<ObjectRef[]>;
}

/** No dependencies kept: tools and tests that do not need wake-ups. */
export const NO_DEPENDENTS: DependentsPort = {
  add: async () => undefined,
  take: async () => [],
};

/**
 * The newest version of each of our objects a step or `/events` handled, with a digest of its content
 * ('' when unknown): what tells a stale or unchanged event from news without a read. `remember` keeps
 * only a newer one (src/adapters/redis/newest-seen.ts).
 */
export interface NewestHandled {
  remember(object: ObjectRef, seen: SeenObject): Promise<void>;
}
