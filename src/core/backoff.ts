import type { Op } from '../schemas/result.ts';
import { EVIDENCE_TABLE, type Evidence } from './classify.ts';
import { type JobRecord, newestFirst } from './job-record.ts';

/**
 * Retries and backoff (DESIGN.md section 4), compiled in: the failures of one op are folded run by run into
 * a small retry state, and the delay grows from 1 minute to a 10-minute cap. Retries never stop.
 *
 * The state is kept in `status.attempts.<op>` (src/core/attempts.ts), so the deletion of a Job (pruning,
 * the controller's own late-deadline delete, a person's `kubectl delete job`) never erases a failure; the
 * same fold over the retained Jobs gives the same verdict for objects written before that field existed.
 */

export const BACKOFF_BASE_SECONDS = 60;
export const BACKOFF_CAP_SECONDS = 600;
/** Interruptions that are not deadline kills retry at once this many times in a row (section 4). */
export const INTERRUPTION_ALLOWANCE = 5;
/**
 * A state lock held by a live pod of this object waits 30 s, uncounted, this many times in a row; from then
 * on each one counts like any failure, so a lock that never frees reaches the normal backoff.
 */
export const LOCK_CONTENTION_ALLOWANCE = 5;

/**
 * Seconds to wait after `failures` counted failures of one op: `min(60 s × 2^(n-1), 600 s)`, and the 600 s
 * cap as soon as `failures` reaches `failedJobsHistoryLimit` (defaults: 1 m, 2 m, 10 m, 10 m …). 0 for 0.
 */
export function backoffDelaySeconds(failures: number, failedJobsHistoryLimit: number): number {
  if (failures <= 0) return 0;
  if (failures >= failedJobsHistoryLimit) return BACKOFF_CAP_SECONDS;
  return Math.min(BACKOFF_BASE_SECONDS * 2 ** (failures - 1), BACKOFF_CAP_SECONDS);
}

/** The retry accounting of one op after some runs: what `status.attempts.<op>` stores. */
export interface RetryState {
  /** The evidence of the newest run folded in; absent before any. */
  newest?: Evidence;
  /** Counted failures since the newest success. */
  failures: number;
  /** Interruptions that are not deadline kills, in a row up to the newest run. */
  interruptions: number;
  /** Runs that found the state lock held by a live pod of the object, in a row up to the newest run. */
  lockContentions: number;
  /** Finish of the newest counted failure, ms since the epoch. */
  failedAtMs?: number;
  /** Finish of the newest interruption of the current row, ms since the epoch. */
  interruptedAtMs?: number;
  /** Finish of the newest lock contention of the current row, ms since the epoch. */
  lockContendedAtMs?: number;
}

/** No run yet. */
export const NO_RETRIES: RetryState = { failures: 0, interruptions: 0, lockContentions: 0 };

/** One finished run as the fold reads it. */
export interface FoldedRun {
  evidence: Evidence;
  finishedAtMs: number;
}

/**
 * Folds one run (newer than every run in `state`) into the state: a success resets it; a counted failure
 * adds one and ends any row of interruptions and contentions; an interruption or a contention extends its
 * own row; blocked and plan-changed runs neither count nor reset, but end both rows.
 */
export function foldRun(state: RetryState, run: FoldedRun): RetryState {
  const row = EVIDENCE_TABLE[run.evidence];
  if (row.success) return { ...NO_RETRIES, newest: run.evidence };
  const rowsEnded = {
    interruptions: 0,
    lockContentions: 0,
    interruptedAtMs: undefined,
    lockContendedAtMs: undefined,
  };
  if (row.interruption) {
    return {
      ...state,
      newest: run.evidence,
      interruptions: state.interruptions + 1,
      interruptedAtMs: run.finishedAtMs,
      lockContentions: 0,
      lockContendedAtMs: undefined,
    };
  }
  if (run.evidence === 'lock-contended') {
    return {
      ...state,
      newest: run.evidence,
      lockContentions: state.lockContentions + 1,
      lockContendedAtMs: run.finishedAtMs,
      interruptions: 0,
      interruptedAtMs: undefined,
    };
  }
  if (row.counted)
    return {
      ...state,
      ...rowsEnded,
      newest: run.evidence,
      failures: state.failures + 1,
      failedAtMs: run.finishedAtMs,
    };
  return { ...state, ...rowsEnded, newest: run.evidence };
}

/** Drops undefined fields (the fold's way of ending a row), so states compare and serialise plainly. */
export function compactState(state: RetryState): RetryState {
  return Object.fromEntries(Object.entries(state).filter(([, value]) => value !== undefined)) as RetryState;
}

/** The bookkept Jobs of `op` that carry an outcome, oldest first: what retry accounting reads. */
function accountedOldestFirst(records: readonly JobRecord[], op: Op): JobRecord[] {
  return newestFirst(records, op)
    .filter((r) => r.bookkept && r.outcome !== undefined)
    .reverse();
}

/** The fold over the retained, bookkept Jobs of `op` (oldest first), starting from `from`. */
export function retryStateOf(
  records: readonly JobRecord[],
  op: Op,
  from: RetryState = NO_RETRIES,
): RetryState {
  let state = from;
  for (const record of accountedOldestFirst(records, op)) {
    if (record.outcome === undefined) continue;
    state = foldRun(state, { evidence: record.outcome, finishedAtMs: record.finishedAtMs ?? 0 });
  }
  return compactState(state);
}

/** The failures of one op since its newest success, as the retry verdict reads them. */
export interface FailureHistory {
  /** Counted failures (section 4 "Counted") since the newest success. */
  counted: number;
  /** Interruptions that are not deadline kills, in a row, newest first (`currentInterruptionRun`). */
  interruptionsInRow: number;
  /** Contended state locks in a row up to the newest run; absent when none. */
  lockContentionsInRow?: number;
  /**
   * Finish of the newest counted failure or interruption of the current row, in ms since the epoch. An
   * interruption that an uncounted run (blocked, lock contended) already followed no longer delays anything.
   */
  newestFailureMs?: number;
}

/** The failure history a retry state stands for. */
export function historyOf(state: RetryState): FailureHistory {
  const newestFailureMs =
    state.interruptions > 0
      ? state.interruptedAtMs
      : state.lockContentions >= LOCK_CONTENTION_ALLOWANCE
        ? state.lockContendedAtMs
        : state.failedAtMs;
  return {
    counted: state.failures,
    interruptionsInRow: state.interruptions,
    ...(state.lockContentions > 0 ? { lockContentionsInRow: state.lockContentions } : {}),
    ...(newestFailureMs !== undefined ? { newestFailureMs } : {}),
  };
}

/**
 * The failure history of `op` from its retained Jobs: walks them and stops at a success (DESIGN.md section
 * 4). Blocked and plan-changed runs and contended locks neither count nor stop the walk; they do end a run
 * of interruptions.
 */
export function failureHistory(records: readonly JobRecord[], op: Op): FailureHistory {
  return historyOf(retryStateOf(records, op));
}

/**
 * The current run of interruptions of `op`: the interruptions (not deadline kills) newest first, up to the
 * first Job that is not one (DESIGN.md section 4, "its own cap of 5 in a row").
 */
export function currentInterruptionRun(records: readonly JobRecord[], op: Op): JobRecord[] {
  return currentRow(records, op, (outcome) => EVIDENCE_TABLE[outcome].interruption);
}

/** The current run of contended locks of `op`, newest first. */
export function currentContentionRun(records: readonly JobRecord[], op: Op): JobRecord[] {
  return currentRow(records, op, (outcome) => outcome === 'lock-contended');
}

function currentRow(
  records: readonly JobRecord[],
  op: Op,
  inRow: (outcome: Evidence) => boolean,
): JobRecord[] {
  const run: JobRecord[] = [];
  for (const record of [...accountedOldestFirst(records, op)].reverse()) {
    if (record.outcome === undefined || !inRow(record.outcome)) break;
    run.push(record);
  }
  return run;
}

/**
 * How many Jobs of a current row (interruptions or contentions) pruning keeps (src/core/prune.ts): the
 * allowance, plus enough for the failures they add to reach `failedJobsHistoryLimit`, where the delay
 * stops growing. So the cap is reachable and pruning never changes a retry verdict.
 */
export function interruptionsRetained(failedJobsHistoryLimit: number): number {
  return INTERRUPTION_ALLOWANCE - 1 + Math.max(1, failedJobsHistoryLimit);
}

/** How many Jobs of the current row of contended locks pruning keeps (as for interruptions). */
export function contentionsRetained(failedJobsHistoryLimit: number): number {
  return LOCK_CONTENTION_ALLOWANCE - 1 + Math.max(1, failedJobsHistoryLimit);
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
 * applies; contended locks likewise past LOCK_CONTENTION_ALLOWANCE - 1. The delay runs from the finish of
 * the newest failed Job.
 */
export function retryVerdict(history: FailureHistory, failedJobsHistoryLimit: number): RetryVerdict {
  const overAllowance = Math.max(0, history.interruptionsInRow - INTERRUPTION_ALLOWANCE + 1);
  if (history.interruptionsInRow > 0 && overAllowance === 0)
    return { kind: 'now', reason: 'InterruptionRetry' };
  const contentionsOver = Math.max(0, (history.lockContentionsInRow ?? 0) - LOCK_CONTENTION_ALLOWANCE + 1);
  const failures = history.counted + overAllowance + contentionsOver;
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
