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
  /** Interruptions that are not deadline kills, in a row, newest first. */
  interruptionsInRow: number;
  /** Finish of the newest failed or interrupted Job, in ms since the epoch. */
  newestFailureMs?: number;
}

/**
 * Walks the bookkept Jobs of `op` newest first and stops at a success (DESIGN.md section 4). Blocked and
 * plan-changed runs and contended locks neither count nor stop the walk; they do end a run of interruptions.
 */
export function failureHistory(records: readonly JobRecord[], op: Op): FailureHistory {
  let counted = 0;
  let interruptionsInRow = 0;
  let inInterruptionRun = true;
  let newestFailureMs: number | undefined;
  for (const record of newestFirst(records, op)) {
    if (!record.bookkept || record.outcome === undefined) continue;
    const row = EVIDENCE_TABLE[record.outcome];
    if (row.success) break;
    if (row.interruption && inInterruptionRun) interruptionsInRow += 1;
    else inInterruptionRun = false;
    if (row.counted) counted += 1;
    if ((row.counted || row.interruption) && newestFailureMs === undefined)
      newestFailureMs = record.finishedAtMs;
  }
  return { counted, interruptionsInRow, ...(newestFailureMs !== undefined ? { newestFailureMs } : {}) };
}

/** When the next attempt of an op may start. */
export type RetryVerdict =
  | { kind: 'now'; reason: 'NoFailures' | 'InterruptionRetry' }
  | { kind: 'backoff'; reason: 'Backoff'; failures: number; delaySeconds: number; notBeforeMs: number };

/**
 * The retry verdict for one op. Up to INTERRUPTION_ALLOWANCE interruptions in a row retry at once; from
 * then on each further interruption in the row counts as a failure, so the normal backoff applies. The
 * delay runs from the finish of the newest failed Job.
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
    failures,
    delaySeconds,
    notBeforeMs: history.newestFailureMs + delaySeconds * 1000,
  };
}
