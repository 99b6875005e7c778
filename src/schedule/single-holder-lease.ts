import type { RedisAdapter } from '../adapters/redis/adapter.ts';

/**
 * A single-holder lease under one fixed name (the sweep's, the relay leader's), over the adapter's one
 * token lease (src/adapters/redis/token-lease.ts, also the per-object step lock). One re-entrancy rule for
 * all of them: a take by the holder that already holds the lease succeeds and refreshes its TTL. A caller
 * that must not re-enter (the sweep, which uses the lease as its "due" timer) takes it under a holder of
 * its own per call. A lease outcome that timed out is "unknown", never "held" (DESIGN.md section 13): these
 * methods answer false.
 */
export interface SingleHolderLease {
  /** Takes the lease for `holder` for `ttlMs` if nobody else holds it; true when `holder` now holds it. */
  tryAcquire(holder: string, ttlMs: number): Promise<boolean>;
  /** Extends the lease if `holder` still holds it; false when it was lost. */
  renew(holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if `holder` holds it. */
  release(holder: string): Promise<void>;
}

/** The named lease `name` (hash-tagged by the adapter's key layout, so one slot on Redis Cluster). */
export function namedLease(
  redis: Pick<RedisAdapter, 'takeLease' | 'renewLease' | 'releaseLease'>,
  name: string,
): SingleHolderLease {
  const seconds = (ttlMs: number) => Math.max(1, Math.ceil(ttlMs / 1000));
  return {
    async tryAcquire(holder, ttlMs) {
      return (await redis.takeLease(name, holder, seconds(ttlMs))).kind === 'acquired';
    },
    async renew(holder, ttlMs) {
      return (await redis.renewLease(name, holder, seconds(ttlMs))).kind === 'renewed';
    },
    async release(holder) {
      await redis.releaseLease(name, holder);
    },
  };
}
