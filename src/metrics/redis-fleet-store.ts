import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { isTargetKind } from '../schemas/kinds/api-group.ts';
import { WaitReasonSchema } from '../schemas/kinds/wait-reason.ts';
import { OpSchema, RunResultSchema } from '../schemas/result.ts';
import type {
  FleetMetricsStore,
  JobTotal,
  LastSuccess,
  ObjectFigures,
  ObjectSize,
  SizeFigure,
} from './fleet.ts';

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

const SIZE_FIGURES: readonly SizeFigure[] = ['state', 'inputs'];

/**
 * An object's figures as stored (JSON, without the identity, which is the field name). Parsed on read:
 * a field written by another version that does not fit is skipped, never exported half-read.
 */
const StoredFiguresSchema = z.object({
  paused: z.boolean(),
  deletingSinceSeconds: z.number().optional(),
  driftDetected: z.boolean(),
  schedules: z.object({ drift: z.boolean(), refresh: z.boolean() }),
  waitReason: WaitReasonSchema.optional(),
  activeJob: z
    .object({ op: OpSchema, startedAtSeconds: z.number(), deadlineSeconds: z.number().optional() })
    .optional(),
  pendingPlan: z.object({ plan: z.string(), sinceSeconds: z.number() }).optional(),
});

/** The JSON of an object's figures without its identity (the field name carries it). */
function storedFigures(figures: ObjectFigures): string {
  const { kind: _kind, namespace: _namespace, name: _name, ...stored } = figures;
  return JSON.stringify(stored);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Builds the store over an ioredis client; `prefix` is the configured key prefix. */
export function createRedisFleetStore(redis: Redis | Cluster, prefix: string): FleetMetricsStore {
  const keys = {
    active: `${prefix}:{metrics}:jobs-active`,
    totals: `${prefix}:{metrics}:jobs-total`,
    success: `${prefix}:{metrics}:last-success`,
    objects: `${prefix}:{metrics}:objects`,
    sizes: `${prefix}:{metrics}:sizes`,
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
    async objectSeen(figures) {
      await redis.hset(
        keys.objects,
        [figures.kind, figures.namespace, figures.name].join(SEP),
        storedFigures(figures),
      );
    },
    async sizeMeasured(size) {
      await redis.hset(
        keys.sizes,
        [size.kind, size.namespace, size.name, size.what].join(SEP),
        String(size.bytes),
      );
    },
    async forget(object) {
      const id = [object.kind, object.namespace, object.name];
      await redis.hdel(keys.success, ...OpSchema.options.map((op) => [...id, op].join(SEP)));
      await redis.hdel(keys.objects, id.join(SEP));
      await redis.hdel(keys.sizes, ...SIZE_FIGURES.map((what) => [...id, what].join(SEP)));
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
    async objects() {
      const rows: ObjectFigures[] = [];
      for (const [field, value] of Object.entries(await redis.hgetall(keys.objects))) {
        const [kind, namespace, name] = field.split(SEP);
        const parsed = StoredFiguresSchema.safeParse(parseJson(value));
        if (!isTargetKind(kind) || namespace === undefined || name === undefined || !parsed.success) continue;
        rows.push({ kind, namespace, name, ...parsed.data });
      }
      return rows;
    },
    async sizes() {
      const rows: ObjectSize[] = [];
      for (const [field, value] of Object.entries(await redis.hgetall(keys.sizes))) {
        const [kind, namespace, name, what] = field.split(SEP);
        const figure = SIZE_FIGURES.find((known) => known === what);
        if (!isTargetKind(kind) || namespace === undefined || name === undefined || figure === undefined)
          continue;
        rows.push({ kind, namespace, name, what: figure, bytes: Number(value) });
      }
      return rows;
    },
  };
}
