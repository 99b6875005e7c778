import type { ObjectKind } from '../core/object-ref.ts';
import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
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

/**
 * What the newest step saw of one object, for the per-object gauges the alerts join on (DESIGN.md section
 * 14): a paused object, a disabled schedule or a wait for approval must keep an alert quiet, and a deletion,
 * a drift finding, a long wait or a long Job must raise one. Written after every step, so it is at most one
 * requeue old.
 */
export interface ObjectFigures {
  kind: ObjectKind;
  namespace: string;
  name: string;
  /** Cluster API pause (DESIGN.md section 2). */
  paused: boolean;
  /** Unix time of `metadata.deletionTimestamp`, while the object is being deleted. */
  deletingSinceSeconds?: number;
  /** The `DriftDetected` condition is True. */
  driftDetected: boolean;
  /** Whether the object's drift checks and health refreshes are scheduled at all. */
  schedules: { drift: boolean; refresh: boolean };
  /** `status.waitReason`, when the object waits (a closed set, src/schemas/kinds/wait-reason.ts). */
  waitReason?: WaitReason;
  /** `status.activeJob`, with the Job's `activeDeadlineSeconds` when the Job was read. */
  activeJob?: { op: Op; startedAtSeconds: number; deadlineSeconds?: number };
  /**
   * The TerraformPlan the object waits on for approval (`status.pendingPlanRef` while `waitReason` is
   * `AwaitingApproval`) and the Unix time it began to wait (its creation).
   */
  pendingPlan?: { plan: string; sinceSeconds: number };
}

/** What a size figure measures: the state Secret, or the per-run Secret's run config. */
export type SizeFigure = 'state' | 'inputs';

/** One measured size of one object, in bytes. */
export interface ObjectSize {
  kind: ObjectKind;
  namespace: string;
  name: string;
  what: SizeFigure;
  bytes: number;
}

/** What `/metrics` reads at collect time. Throws when the store is unreachable. */
export interface FleetMetricsReader {
  jobTotals(): Promise<JobTotal[]>;
  jobsActive(): Promise<number>;
  lastSuccesses(): Promise<LastSuccess[]>;
  objects(): Promise<ObjectFigures[]>;
  sizes(): Promise<ObjectSize[]>;
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
  /** The newest step's view of the object; replaces the previous one. */
  objectSeen(figures: ObjectFigures): Promise<void>;
  /** A size of the object was measured; replaces the previous measure of the same figure. */
  sizeMeasured(size: ObjectSize): Promise<void>;
  /** The object is gone: drop its per-object series (last successes, figures, sizes). */
  forget(object: { kind: ObjectKind; namespace: string; name: string }): Promise<void>;
}

/** A store that both records and reads (the Redis implementation is both). */
export type FleetMetricsStore = FleetMetricsReader & FleetMetricsRecorder;
