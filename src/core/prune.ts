import { OPS } from '../schemas/result.ts';
import {
  contentionsRetained,
  currentContentionRun,
  currentInterruptionRun,
  interruptionsRetained,
} from './backoff.ts';
import { EVIDENCE_TABLE } from './classify.ts';
import { type JobRecord, newestFirst } from './job-record.ts';

/**
 * Pruning selection (DESIGN.md section 7): per object and per op, the bookkept Jobs above the history
 * limits, oldest first. Never selected: running or un-bookkept Jobs, and Jobs already being deleted. The
 * shell deletes with `propagationPolicy: Background` so the pods go too.
 *
 * Retry accounting (section 4, src/core/backoff.ts) reads the retained Jobs, so pruning keeps what it reads
 * and never changes a retry verdict:
 * - successes: the newest `successfulJobsHistoryLimit`, and always the newest one;
 * - counted failures: the newest `failedJobsHistoryLimit` (the delay is at its cap from there), so the
 *   newest failure is always kept;
 * - the current run of interruptions, up to `interruptionsRetained` (so the cap of 5 in a row is reachable);
 *   older interruptions no longer count for anything;
 * - the current run of contended locks likewise (past its allowance each one counts);
 * - runs that wait (blocked, plan-changed, lock contended): only the newest one, which is what ends a run
 *   of interruptions; they never take the place of a counted failure.
 */
export interface HistoryLimits {
  successfulJobsHistoryLimit: number;
  failedJobsHistoryLimit: number;
}

/** Names of the Jobs to delete, oldest first. */
export function selectJobsToPrune(records: readonly JobRecord[], limits: HistoryLimits): string[] {
  const selected: JobRecord[] = [];
  for (const op of OPS) {
    const done = newestFirst(records, op).filter(
      (r) => r.finished && r.bookkept && r.outcome !== undefined && !r.deleting,
    );
    const rowOf = (r: JobRecord) => (r.outcome === undefined ? undefined : EVIDENCE_TABLE[r.outcome]);
    const successes = done.filter((r) => rowOf(r)?.success === true);
    const counted = done.filter((r) => rowOf(r)?.counted === true);
    const waiting = done.filter((r) => {
      const row = rowOf(r);
      return row !== undefined && !row.success && !row.counted && !row.interruption;
    });
    const interruptions = currentInterruptionRun(records, op).slice(
      0,
      interruptionsRetained(limits.failedJobsHistoryLimit),
    );
    const contentions = currentContentionRun(records, op).slice(
      0,
      contentionsRetained(limits.failedJobsHistoryLimit),
    );
    const keep = new Set<JobRecord>([
      ...successes.slice(0, Math.max(1, limits.successfulJobsHistoryLimit)),
      ...counted.slice(0, Math.max(1, limits.failedJobsHistoryLimit)),
      ...interruptions,
      ...contentions,
      ...waiting.slice(0, 1),
    ]);
    selected.push(...done.filter((r) => !keep.has(r)));
  }
  return selected
    .sort((a, b) => (a.finishedAtMs ?? 0) - (b.finishedAtMs ?? 0) || a.createdAtMs - b.createdAtMs)
    .map((r) => r.name);
}
