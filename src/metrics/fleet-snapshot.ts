import type { FleetMetricsReader, JobTotal, LastSuccess, ObjectFigures, ObjectSize } from './fleet.ts';

/**
 * What `/metrics` shows of the fleet (DESIGN.md section 14), read from the shared store in one pass and kept
 * for a while: a scrape answers from memory, and the store is read at most once per `maxAgeMs` per instance
 * whatever the number of scrapers (a Prometheus pair, a second operator-managed Prometheus, a person with
 * curl). The figures are at most `maxAgeMs` old on top of the scrape interval, which the alerts' `for` and
 * ranges (10 minutes and more) do not notice.
 */
export interface FleetSnapshot {
  jobTotals: JobTotal[];
  jobsActive: number;
  lastSuccesses: LastSuccess[];
  objects: ObjectFigures[];
  sizes: ObjectSize[];
}

/** How long a snapshot is kept, and the clock it is measured by. */
export interface FleetSnapshotOptions {
  /** Milliseconds a snapshot answers scrapes; 0: every collect reads (sharing a read in flight). */
  maxAgeMs: number;
  /** Milliseconds since the epoch. */
  nowMs: () => number;
}

/**
 * A source of fleet snapshots: answers the kept one while it is younger than `maxAgeMs`, else reads anew;
 * concurrent callers share one read. A failed read is reported to `onError` once, answers undefined (each
 * series then keeps what it showed), and is not kept, so the next scrape tries again.
 */
export function fleetSnapshots(
  reader: FleetMetricsReader,
  onError: (error: unknown) => void,
  options: FleetSnapshotOptions,
): () => Promise<FleetSnapshot | undefined> {
  let kept: { atMs: number; snapshot: FleetSnapshot } | undefined;
  let inFlight: Promise<FleetSnapshot | undefined> | undefined;
  const read = async (): Promise<FleetSnapshot | undefined> => {
    const startedMs = options.nowMs();
    try {
      const [jobTotals, jobsActive, lastSuccesses, objects, sizes] = await Promise.all([
        reader.jobTotals(),
        reader.jobsActive(),
        reader.lastSuccesses(),
        reader.objects(),
        reader.sizes(),
      ]);
      const snapshot = { jobTotals, jobsActive, lastSuccesses, objects, sizes };
      kept = { atMs: startedMs, snapshot };
      return snapshot;
    } catch (error) {
      onError(error);
      return undefined;
    } finally {
      inFlight = undefined;
    }
  };
  return () => {
    if (kept !== undefined && options.nowMs() - kept.atMs < options.maxAgeMs)
      return Promise.resolve(kept.snapshot);
    inFlight ??= read();
    return inFlight;
  };
}
