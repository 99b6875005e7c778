import { performance } from 'node:perf_hooks';

/**
 * Latency and throughput of an asynchronous operation (a Redis round trip, an `app.inject` request):
 * sequential calls give the latency distribution; calls kept `concurrency` in flight give the throughput a
 * busy handler process would see.
 */

/** Percentiles in microseconds and the sequential rate. */
export interface LatencySummary {
  samples: number;
  p50Us: number;
  p99Us: number;
  /** Calls per second with one call in flight. */
  opsPerSecond: number;
}

/** The `q` quantile (0..1) of ascending `sorted` values, nearest rank. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

/** Summarises per-call latencies (microseconds, any order) measured over `totalMs` of wall time. */
export function summarise(micros: readonly number[], totalMs: number): LatencySummary {
  const sorted = [...micros].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50Us: quantile(sorted, 0.5),
    p99Us: quantile(sorted, 0.99),
    opsPerSecond: (sorted.length * 1000) / totalMs,
  };
}

/**
 * Calls `op(i)` `count` times one after another (after `warmup` untimed calls) and summarises the
 * latencies. `op` receives the call index so each call can use its own key or event; the warm-up calls get
 * the indices `count` to `count + warmup - 1`, so they never reuse a timed call's key.
 */
export async function measureLatency(
  count: number,
  op: (index: number) => Promise<unknown>,
  warmup = Math.min(200, count),
): Promise<LatencySummary> {
  for (let i = 0; i < warmup; i++) await op(count + i);
  const micros: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const callStarted = performance.now();
    await op(i);
    micros.push((performance.now() - callStarted) * 1000);
  }
  return summarise(micros, performance.now() - started);
}

/**
 * Calls `op(i)` `count` times with `concurrency` calls in flight, `rounds` times (round r uses the indices
 * `r * count` to `r * count + count - 1`), and answers the median rate in calls per second: one burst of
 * load from another process moves one round, not the figure.
 */
export async function measureConcurrentRate(
  count: number,
  concurrency: number,
  op: (index: number) => Promise<unknown>,
  rounds = 3,
): Promise<number> {
  const rates: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < count) {
        const index = next;
        next += 1;
        await op(round * count + index);
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    rates.push((count * 1000) / (performance.now() - started));
  }
  rates.sort((a, b) => a - b);
  return rates[Math.floor(rates.length / 2)] ?? Number.NaN;
}
