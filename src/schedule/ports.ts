import type { ObjectRef } from '../step/contract.ts';

/**
 * What the tick runner and the sweep need from Redis (DESIGN.md section 8), as small interfaces; the Redis
 * adapter implements them. Every method throws UnavailableError (src/http/errors.ts) when Redis is down.
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
  /** Claims up to `limit` members due at or before `nowMs`, oldest first. */
  claimDue(nowMs: number, limit: number, visibilityMs: number): Promise<Claim[]>;
  /**
   * Ends a claim atomically: the member is due again at `nextDueAtMs` (earliest of that and any `add` made
   * meanwhile), or removed when `nextDueAtMs` is undefined and nothing was added meanwhile.
   */
  complete(claim: Claim, nextDueAtMs: number | undefined): Promise<void>;
}

/**
 * A single-holder lease under one fixed name (the sweep's, the relay's). A lease outcome that timed out is
 * "unknown", never "held" (DESIGN.md section 13): the adapter answers false.
 */
export interface SingleHolderLease {
  /** Takes the lease for `holder` for `ttlMs` if nobody holds it; true when `holder` now holds it. */
  tryAcquire(holder: string, ttlMs: number): Promise<boolean>;
  /** Extends the lease if `holder` still holds it; false when it was lost. */
  renew(holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if `holder` holds it. */
  release(holder: string): Promise<void>;
}
