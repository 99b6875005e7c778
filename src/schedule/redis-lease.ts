import type { Cluster, Redis } from 'ioredis';
import type { SingleHolderLease } from './ports.ts';

/**
 * A single-holder lease in Redis (notes SERVERLESS-FACTS section 5.1): `SET key holder NX PX ttl` to take,
 * compare-and-extend / compare-and-delete in Lua to renew and release, so only the holder can. Used for the
 * sweep and the relay election. A Redis error answers false ("unknown, never held", DESIGN.md section 13).
 */

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/** A lease under `key` (hash-tag it, e.g. `captf:{sweep}:lease`, so it stays one slot on Redis Cluster). */
export function createRedisLease(redis: Redis | Cluster, key: string): SingleHolderLease {
  return {
    async tryAcquire(holder, ttlMs) {
      try {
        return (await redis.set(key, holder, 'PX', ttlMs, 'NX')) === 'OK';
      } catch {
        return false;
      }
    },
    async renew(holder, ttlMs) {
      try {
        return (await redis.eval(RENEW, 1, key, holder, String(ttlMs))) === 1;
      } catch {
        return false;
      }
    },
    async release(holder) {
      await redis.eval(RELEASE, 1, key, holder);
    },
  };
}
