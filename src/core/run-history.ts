import { ANNOTATIONS, LABELS } from './job-labels.ts';
import { jobRecord } from './job-record.ts';
import { RUN_LOG_ANNOTATIONS } from './run-log.ts';
import { type JobView, type MetaView, timestampMs } from './views.ts';

/**
 * The run history of one object (`kubectl captf runs` and `logs`): its Jobs, read live, merged with the
 * run-log Secrets kept after a Job and its pod are gone (their shape: src/core/run-log.ts).
 */

/** A run-log Secret's metadata, as far as the history reads it (no data). */
export interface RunLogView {
  metadata: MetaView;
}

/** One run of the history. */
export interface RunRow {
  job: string;
  op: string;
  attempt: number;
  /**
   * When the run started, ms since the epoch: the Job's creation; for a gone Job, the status's lastRun when
   * it is that run, else its log's `captf.io/started-at` (else its finish, the nearest time known).
   */
  startedAtMs: number;
  finishedAtMs?: number;
  /** `Running`, `Pending`, the bookkept outcome (`Succeeded`, `Failed…` evidence) or `Complete`/`Failed`. */
  result: string;
  /** The Job still exists (its pod's log may be read live). */
  jobExists: boolean;
  /** A run-log Secret keeps its log. */
  logKept: boolean;
}

function jobResult(job: JobView): string {
  const record = jobRecord(job);
  if (record?.outcome) return record.outcome;
  const finished = job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  if (finished) return finished.type;
  return job.status?.active ? 'Running' : 'Pending';
}

/** The object's `status.lastRun`, as far as the history reads it. */
export interface LastRunView {
  job?: string;
  op?: string;
  attempt?: number;
  result?: string;
  reason?: string;
  /** RFC 3339; when the run started, as bookkeeping recorded it. */
  startedAt?: string;
  /** RFC 3339; when the run's Job finished, as bookkeeping recorded it. */
  finishedAt?: string;
}

function lastRunResult(lastRun: LastRunView): string {
  return `${lastRun.result}${lastRun.reason ? ` (${lastRun.reason})` : ''}`;
}

/**
 * When a run whose Job is gone finished: its log Secret's `captf.io/finished-at` (the controller writes it on
 * a log it kept from the pod), else the object's `status.lastRun` when it is that run, else the Secret's
 * creation, as the runner creates it just before it exits (DESIGN.md section 7).
 */
function keptRunFinishedMs(
  job: string,
  secret: RunLogView,
  lastRun: LastRunView | undefined,
): number | undefined {
  const annotations = secret.metadata.annotations ?? {};
  return (
    timestampMs(annotations[ANNOTATIONS.finishedAt]) ??
    (lastRun?.job === job ? timestampMs(lastRun.finishedAt) : undefined) ??
    (annotations[RUN_LOG_ANNOTATIONS.source] === undefined
      ? timestampMs(secret.metadata.creationTimestamp)
      : undefined)
  );
}

/**
 * When a run whose Job is gone started: the object's `status.lastRun` when it is that run (the Job's start,
 * on the API server's clock like the finish), else its log Secret's `captf.io/started-at` (the runner's
 * start, or the `source` container's on a log kept from the pod), else, for a log from before that
 * annotation, its finish, the nearest time known: `captf.io/finished-at` on a log kept from the pod (made
 * at bookkeeping, after the finish), else the Secret's creation (the runner makes it as it exits).
 */
function keptRunStartedMs(job: string, secret: RunLogView, lastRun: LastRunView | undefined): number {
  const annotations = secret.metadata.annotations ?? {};
  return (
    (lastRun?.job === job ? timestampMs(lastRun.startedAt) : undefined) ??
    timestampMs(annotations[ANNOTATIONS.startedAt]) ??
    timestampMs(annotations[ANNOTATIONS.finishedAt]) ??
    timestampMs(secret.metadata.creationTimestamp) ??
    0
  );
}

/**
 * Merges an object's Jobs with its run-log Secrets (both listed by its owner UID label), newest first
 * (pure). A Job and its Secret make one row; a Secret whose Job is gone makes a row of its own, with the
 * result the object's `status.lastRun` records when it is that run, else `(job gone)`; the run
 * `status.lastRun` records makes a row of its own when neither its Job nor its log is left.
 */
export function runHistory(
  jobs: readonly JobView[],
  logs: readonly RunLogView[],
  lastRun?: LastRunView,
): RunRow[] {
  const logsByJob = new Map(
    logs.map((secret) => [secret.metadata.labels?.[LABELS.job] ?? '', secret] as const),
  );
  const rows: RunRow[] = jobs.map((job) => {
    const labels = job.metadata.labels ?? {};
    const finishedAtMs =
      timestampMs(job.metadata.annotations?.[ANNOTATIONS.finishedAt]) ??
      timestampMs(job.status?.completionTime);
    return {
      job: job.metadata.name,
      op: labels[LABELS.op] ?? '?',
      attempt: Number.parseInt(labels[LABELS.attempt] ?? '0', 10) || 0,
      startedAtMs: timestampMs(job.metadata.creationTimestamp) ?? 0,
      ...(finishedAtMs === undefined ? {} : { finishedAtMs }),
      result: jobResult(job),
      jobExists: true,
      logKept: logsByJob.has(job.metadata.name),
    };
  });
  const jobNames = new Set(jobs.map((job) => job.metadata.name));
  for (const [job, secret] of logsByJob) {
    if (job === '' || jobNames.has(job)) continue;
    const labels = secret.metadata.labels ?? {};
    const finishedAtMs = keptRunFinishedMs(job, secret, lastRun);
    rows.push({
      job,
      op: labels[LABELS.op] ?? '?',
      attempt: Number.parseInt(labels[LABELS.attempt] ?? '0', 10) || 0,
      startedAtMs: keptRunStartedMs(job, secret, lastRun),
      ...(finishedAtMs === undefined ? {} : { finishedAtMs }),
      result: lastRun?.job === job && lastRun.result !== undefined ? lastRunResult(lastRun) : '(job gone)',
      jobExists: false,
      logKept: true,
    });
  }
  // The newest run the status records, when nothing else is left of it: a Job deleted by hand (or by its
  // deadline) before its runner kept a log is still the run that explains the retry after it.
  const recorded = lastRun?.job;
  if (recorded !== undefined && lastRun?.result !== undefined && !rows.some((row) => row.job === recorded)) {
    const finishedAtMs = timestampMs(lastRun.finishedAt);
    rows.push({
      job: recorded,
      op: lastRun.op ?? '?',
      attempt: lastRun.attempt ?? 0,
      startedAtMs: timestampMs(lastRun.startedAt) ?? finishedAtMs ?? 0,
      ...(finishedAtMs === undefined ? {} : { finishedAtMs }),
      result: lastRunResult(lastRun),
      jobExists: false,
      logKept: false,
    });
  }
  return rows.sort((a, b) => b.startedAtMs - a.startedAtMs || b.attempt - a.attempt);
}

/** The run `logs` shows: the newest, of `op` when given, of `attempt` when given; undefined when none. */
export function pickRun(rows: readonly RunRow[], op?: string, attempt?: number): RunRow | undefined {
  return rows.find(
    (row) => (op === undefined || row.op === op) && (attempt === undefined || row.attempt === attempt),
  );
}

/**
 * The one-line header `logs` prints over a kept log: which run, and whether the text was cut to its last
 * bytes or is incomplete (the run's log could not be read to its end). Pure.
 */
export function runLogHeader(job: string, annotations: Readonly<Record<string, string>>): string {
  const notes: string[] = [];
  const truncated = Number(annotations[RUN_LOG_ANNOTATIONS.truncatedBytes] ?? '0');
  if (Number.isFinite(truncated) && truncated > 0)
    notes.push(`truncated: the first ${truncated} bytes are not kept`);
  if (annotations[RUN_LOG_ANNOTATIONS.source] !== undefined)
    notes.push("from the pod's log: its runner was killed before it kept its own");
  else if (annotations[RUN_LOG_ANNOTATIONS.complete] === 'false')
    notes.push('incomplete: the log could not be read to its end');
  return `# log of ${job}, kept after its pod (${notes.length > 0 ? notes.join('; ') : 'complete'})`;
}

/** The `runs` table (pure). */
export function runTable(rows: readonly RunRow[]): string[] {
  const iso = (ms: number | undefined) =>
    ms === undefined ? '-' : `${new Date(ms).toISOString().slice(0, 19)}Z`;
  const cells = [
    ['JOB', 'OP', 'ATTEMPT', 'STARTED', 'FINISHED', 'RESULT', 'LOG'],
    ...rows.map((row) => [
      row.job,
      row.op,
      String(row.attempt),
      iso(row.startedAtMs),
      iso(row.finishedAtMs),
      row.result,
      row.jobExists ? (row.logKept ? 'pod, kept' : 'pod') : row.logKept ? 'kept' : '-',
    ]),
  ];
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map((row) => row[i]?.length ?? 0))) ?? [];
  return cells.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}
