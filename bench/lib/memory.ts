import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Settled memory readings: a full garbage collection first, so "before" and "after" compare live memory
 * and not whatever garbage happened to be waiting. The dispatcher starts each bench as plain
 * `node file.ts`, so `gc` is switched on here rather than with `--expose-gc` on the command line.
 */

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as (options?: { type: 'major' }) => void;

/** One reading, in bytes. */
export interface MemoryReading {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

/** Collects garbage twice (finalizers of the first pass free more in the second), then reads memory. */
export function settledMemory(): MemoryReading {
  collect();
  collect();
  const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
  return { rss, heapUsed, heapTotal, external };
}
