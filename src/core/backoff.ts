import type { Op } from '../schemas/result.ts';
import { EVIDENCE_TABLE } from './classify.ts';
import { type JobRecord, newestFirst } from './job-record.ts';

/**
 * Retries and backoff (DESIGN.md section 4), compiled in: failures are counted per op from the object's
 * bookkept Jobs, and the delay grows from 1 minute to a 10-minute cap. Retries never stop.
 */

export const BACKOFF_BASE_SECONDS = 60;
export const BACKOFF_CAP_SECONDS = 600;
/** Interruptions that are not deadline kills retry at once this many times in a row (section 4). */
export const INTERRUPTION_ALLOWANCE = 5;

/**
 * Seconds to wait after `failures` counted failures of one op: `min(60 s × 2^(n-1), 600 s)`, and the 600 s
 * cap as soon as `failures` reaches `failedJobsHistoryLimit` (defaults: 1 m, 2 m, 10 m, 10 m …). 0 for 0.
 */
export function backoffDelaySeconds(failures: number, failedJobsHistoryLimit: number): number {
  if (failures <= 0) return 0;
  if (failures >= failedJobsHistoryLimit) return BACKOFF_CAP_SECONDS;
  return Math.min(BACKOFF_BASE_SECONDS * 2 ** (failures - 1), BACKOFF_CAP_SECONDS);
}

/** The failures of one op since its newest success. */
export interface FailureHistory {
  /** Counted failures (section 4 "Counted"), newest first up to the newest success. */
  counted: number;
  /** Interruptions that are not deadline kills, in a row, newest first (`currentInterruptionRun`). */
  interruptionsInRow: number;
  /**
   * Finish of the newest counted failure or interruption of the current run, in ms since the epoch. An
   * interruption that an uncounted run (blocked, lock contended) already followed no longer delays anything.
   */
  newestFailureMs?: number;
}

/** The bookkept Jobs of `op` that carry an outcome, newest first: what retry accounting reads. */
function accountedNewestFirst(records: readonly JobRecord[], op: Op): JobRecord[] {
  return newestFirst(records, op).filter((r) => r.bookkept && r.outcome !== undefined);
}

/**
 * The current run of interruptions of `op`: the interruptions (not deadline kills) newest first, up to the
 * first Job that is not one (DESIGN.md section 4, "its own cap of 5 in a row").
 */
export function currentInterruptionRun(records: readonly JobRecord[], op: Op): JobRecord[] {
  const run: JobRecord[] = [];
  for (const record of accountedNewestFirst(records, op)) {
    if (record.outcome === undefined || !EVIDENCE_TABLE[record.outcome].interruption) break;
    run.push(record);
  }
  return run;
}

/**
 * How many Jobs of the current interruption run pruning keeps (src/core/prune.ts): the allowance, plus
 * enough for the failures they add to reach `failedJobsHistoryLimit`, where the delay stops growing. So the
 * cap is reachable and pruning never changes a retry verdict.
 */
export function interruptionsRetained(failedJobsHistoryLimit: number): number {
  return INTERRUPTION_ALLOWANCE - 1 + Math.max(1, failedJobsHistoryLimit);
}

/**
 * Walks the bookkept Jobs of `op` newest first and stops at a success (DESIGN.md section 4). Blocked and
 * plan-changed runs and contended locks neither count nor stop the walk; they do end a run of interruptions.
 */
export function failureHistory(records: readonly JobRecord[], op: Op): FailureHistory {
  const run = currentInterruptionRun(records, op);
  let counted = 0;
  let newestFailureMs = run[0]?.finishedAtMs;
  for (const record of accountedNewestFirst(records, op)) {
    if (record.outcome === undefined) continue;
    const row = EVIDENCE_TABLE[record.outcome];
    if (row.success) break;
    if (!row.counted) continue;
    counted += 1;
    newestFailureMs ??= record.finishedAtMs;
  }
  return {
    counted,
    interruptionsInRow: run.length,
    ...(newestFailureMs !== undefined ? { newestFailureMs } : {}),
  };
}

/** When the next attempt of an op may start. */
export type RetryVerdict =
  | { kind: 'now'; reason: 'NoFailures' | 'InterruptionRetry' }
  | {
      kind: 'backoff';
      reason: 'Backoff';
      /**
       * Failures the delay is computed from, at most `failedJobsHistoryLimit`: pruning keeps no more than
       * that many, and from there on the delay is the cap anyway.
       */
      failures: number;
      delaySeconds: number;
      notBeforeMs: number;
    };

/**
 * The retry verdict for one op. Up to INTERRUPTION_ALLOWANCE - 1 interruptions in a row retry at once; from
 * the INTERRUPTION_ALLOWANCE-th on each interruption in the row counts as a failure, so the normal backoff
 * applies. The delay runs from the finish of the newest failed Job.
 */
export function retryVerdict(history: FailureHistory, failedJobsHistoryLimit: number): RetryVerdict {
  const overAllowance = Math.max(0, history.interruptionsInRow - INTERRUPTION_ALLOWANCE + 1);
  if (history.interruptionsInRow > 0 && overAllowance === 0)
    return { kind: 'now', reason: 'InterruptionRetry' };
  const failures = history.counted + overAllowance;
  if (failures === 0 || history.newestFailureMs === undefined) return { kind: 'now', reason: 'NoFailures' };
  const delaySeconds = backoffDelaySeconds(failures, failedJobsHistoryLimit);
  return {
    kind: 'backoff',
    reason: 'Backoff',
    failures: Math.min(failures, Math.max(1, failedJobsHistoryLimit)),
    delaySeconds,
    notBeforeMs: history.newestFailureMs + delaySeconds * 1000,
  };
}
