import type { Cluster, Redis } from 'ioredis';
import { isTargetKind } from '../schemas/kinds/api-group.ts';
import { OpSchema, RunResultSchema } from '../schemas/result.ts';
import type { FleetMetricsStore, JobTotal, LastSuccess } from './fleet.ts';

/**
 * The fleet metrics store in Redis (DESIGN.md section 14). All keys share the `{metrics}` hash tag so the
 * Lua script runs on Redis Cluster too (section 8). Figures are rebuildable: losing them resets counters,
 * which Prometheus handles as a counter reset.
 */

/** Removes the Job from the active set and counts it once: a replayed bookkeeping does not double-count. */
const FINISH_SCRIPT = `
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
end
return 0`;

/** Keeps the latest timestamp per series. */
const SUCCESS_SCRIPT = `
local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > old then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0`;

const SEP = '|';

/** Builds the store over an ioredis client; `prefix` is the configured key prefix. */
export function createRedisFleetStore(redis: Redis | Cluster, prefix: string): FleetMetricsStore {
  const keys = {
    active: `${prefix}:{metrics}:jobs-active`,
    totals: `${prefix}:{metrics}:jobs-total`,
    success: `${prefix}:{metrics}:last-success`,
  };
  return {
    async jobStarted(job) {
      await redis.sadd(keys.active, `${job.namespace}/${job.name}`);
    },
    async jobFinished(job) {
      await redis.eval(
        FINISH_SCRIPT,
        2,
        keys.active,
        keys.totals,
        `${job.namespace}/${job.name}`,
        [job.kind, job.op, job.result].join(SEP),
      );
    },
    async succeeded(s) {
      await redis.eval(
        SUCCESS_SCRIPT,
        1,
        keys.success,
        [s.kind, s.namespace, s.name, s.op].join(SEP),
        String(s.timestampSeconds),
      );
    },
    async forget(object) {
      const fields = OpSchema.options.map((op) => [object.kind, object.namespace, object.name, op].join(SEP));
      await redis.hdel(keys.success, ...fields);
    },
    async jobsActive() {
      return redis.scard(keys.active);
    },
    async jobTotals() {
      const rows: JobTotal[] = [];
      for (const [field, value] of Object.entries(await redis.hgetall(keys.totals))) {
        const [kind, op, result] = field.split(SEP);
        const parsedOp = OpSchema.safeParse(op);
        const parsedResult = RunResultSchema.safeParse(result);
        if (!isTargetKind(kind) || !parsedOp.success || !parsedResult.success) continue;
        rows.push({ kind, op: parsedOp.data, result: parsedResult.data, count: Number(value) });
      }
      return rows;
    },
    async lastSuccesses() {
      const rows: LastSuccess[] = [];
      for (const [field, value] of Object.entries(await redis.hgetall(keys.success))) {
        const [kind, namespace, name, op] = field.split(SEP);
        const parsedOp = OpSchema.safeParse(op);
        if (!isTargetKind(kind) || namespace === undefined || name === undefined || !parsedOp.success)
          continue;
        rows.push({ kind, namespace, name, op: parsedOp.data, timestampSeconds: Number(value) });
      }
      return rows;
    },
  };
}
