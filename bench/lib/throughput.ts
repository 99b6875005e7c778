import { performance } from 'node:perf_hooks';

/**
 * Throughput of a synchronous operation: calibrated batches, the median of several rounds reported (a GC
 * pause moves one round, not the figure). Time is the main thread's CPU time (`process.threadCpuUsage`),
 * not wall time: on a shared 2-core machine other processes stretch wall time but not the CPU an
 * operation costs. `wallNsPerOp` is kept so a reader can see how much the machine was contended.
 */

/** One operation's speed. */
export interface Throughput {
  opsPerSecond: number;
  /** Main-thread CPU time per call. */
  nsPerOp: number;
  /** Wall time per call in the same rounds. */
  wallNsPerOp: number;
}

/** A batch takes about this long, so the microsecond resolution of CPU time is noise. */
const BATCH_TARGET_US = 10_000;
const ROUNDS = 7;
/** Warm-up before timing: lets V8 optimise the operation. */
const WARMUP_US = 100_000;

/** Results are folded into this module-level value, so V8 cannot drop an operation whose result is unused. */
let sink = 0;

function fold(value: unknown): void {
  sink = (sink + (typeof value === 'string' ? value.length : value === undefined ? 0 : 1)) | 0;
}

function cpuUs(): number {
  const usage = process.threadCpuUsage();
  return usage.user + usage.system;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Runs `op` in calibrated batches and returns the median speed over ROUNDS rounds. */
export function measureThroughput(op: () => unknown): Throughput {
  let batch = 1;
  const warmupStarted = cpuUs();
  while (cpuUs() - warmupStarted < WARMUP_US) {
    const started = cpuUs();
    for (let i = 0; i < batch; i++) fold(op());
    if (cpuUs() - started < BATCH_TARGET_US) batch *= 2;
  }
  const cpuNs: number[] = [];
  const wallNs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpuStarted = cpuUs();
    const wallStarted = performance.now();
    for (let i = 0; i < batch; i++) fold(op());
    wallNs.push(((performance.now() - wallStarted) * 1e6) / batch);
    cpuNs.push(((cpuUs() - cpuStarted) * 1e3) / batch);
  }
  const nsPerOp = median(cpuNs);
  return { opsPerSecond: 1e9 / nsPerOp, nsPerOp, wallNsPerOp: median(wallNs) };
}
