import { OPS } from '../schemas/result.ts';
import { EVIDENCE_TABLE } from './classify.ts';
import { type JobRecord, newestFirst } from './job-record.ts';

/**
 * Pruning selection (DESIGN.md section 7): per object and per op, the bookkept Jobs above the history
 * limits, oldest first. Kept always: each op's newest success, and its newest failure while no newer success
 * exists. Never selected: running or un-bookkept Jobs, and Jobs already being deleted. The shell deletes
 * with `propagationPolicy: Background` so the pods go too.
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
    const successes = done.filter((r) => r.outcome !== undefined && EVIDENCE_TABLE[r.outcome].success);
    const failures = done.filter((r) => r.outcome !== undefined && !EVIDENCE_TABLE[r.outcome].success);
    const keep = new Set<JobRecord>([
      ...successes.slice(0, limits.successfulJobsHistoryLimit),
      ...failures.slice(0, limits.failedJobsHistoryLimit),
    ]);
    const newestSuccess = successes[0];
    if (newestSuccess) keep.add(newestSuccess);
    const newestFailure = failures[0];
    // A failure newer than every success explains the object's state; keep it whatever the limit.
    if (
      newestFailure &&
      done.indexOf(newestFailure) < (newestSuccess ? done.indexOf(newestSuccess) : done.length)
    ) {
      keep.add(newestFailure);
    }
    selected.push(...done.filter((r) => !keep.has(r)));
  }
  return selected
    .sort((a, b) => (a.finishedAtMs ?? 0) - (b.finishedAtMs ?? 0) || a.createdAtMs - b.createdAtMs)
    .map((r) => r.name);
}
