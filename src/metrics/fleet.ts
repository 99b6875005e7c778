import type { ObjectKind } from '../core/object-ref.ts';
import type { Op, RunResult } from '../schemas/result.ts';

/**
 * Fleet-level figures (DESIGN.md section 14) live in a shared store (Redis) so any instance's `/metrics`
 * shows the whole fleet, whichever instance ran the step that changed them.
 */

/** One `captf_jobs_total` series. */
export interface JobTotal {
  kind: ObjectKind;
  op: Op;
  result: RunResult;
  count: number;
}

/** One `captf_last_success_timestamp_seconds` series. */
export interface LastSuccess {
  kind: ObjectKind;
  namespace: string;
  name: string;
  op: Op;
  timestampSeconds: number;
}

/** What `/metrics` reads at collect time. Throws when the store is unreachable. */
export interface FleetMetricsReader {
  jobTotals(): Promise<JobTotal[]>;
  jobsActive(): Promise<number>;
  lastSuccesses(): Promise<LastSuccess[]>;
}

/** What the step writes: Job start and finish (bookkeeping), and successes. */
export interface FleetMetricsRecorder {
  /** A Job was created; counted active until `jobFinished` names it. Idempotent per Job name. */
  jobStarted(job: { namespace: string; name: string }): Promise<void>;
  /** A finished Job was bookkept: leaves the active set and counts once toward its total. */
  jobFinished(job: {
    namespace: string;
    name: string;
    kind: ObjectKind;
    op: Op;
    result: RunResult;
  }): Promise<void>;
  /** An op succeeded for an object at `timestampSeconds`; keeps the latest. */
  succeeded(success: LastSuccess): Promise<void>;
  /** The object is gone: drop its last-success series. */
  forget(object: { kind: ObjectKind; namespace: string; name: string }): Promise<void>;
}

/** A store that both records and reads (the Redis implementation is both). */
export type FleetMetricsStore = FleetMetricsReader & FleetMetricsRecorder;
