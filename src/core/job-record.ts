import { OPS, type Op } from '../schemas/result.ts';
import { EVIDENCE, type Evidence } from './classify.ts';
import { finishedCondition } from './job-conditions.ts';
import { ANNOTATIONS, LABELS } from './job-labels.ts';
import { type JobView, timestampMs } from './views.ts';

/**
 * One of an object's Jobs as the decision core sees it: what ran, whether it is over, and (once bookkept)
 * how it ended. Built from the Job's labels, annotations and conditions alone, so deciding needs no pods.
 */
export interface JobRecord {
  name: string;
  op: Op;
  attempt: number;
  inputsHash: string;
  createdAtMs: number;
  /** The Job has a Complete or Failed condition. */
  finished: boolean;
  /** When it finished (bookkeeping's record first, then the Job's own), in ms since the epoch. */
  finishedAtMs?: number;
  bookkept: boolean;
  /** The classification written at bookkeeping (`captf.io/outcome`); absent before. */
  outcome?: Evidence;
  /** The Job is being deleted (pruned or by hand). */
  deleting: boolean;
}

function isOp(value: string | undefined): value is Op {
  return (OPS as readonly string[]).includes(value ?? '');
}

function isEvidence(value: string | undefined): value is Evidence {
  return (EVIDENCE as readonly string[]).includes(value ?? '');
}

/**
 * The record of one of our Jobs; undefined for a Job without our op label (not ours to count). An attempt
 * label that does not parse counts as attempt 0, so the next attempt number still moves past it.
 */
export function jobRecord(job: JobView): JobRecord | undefined {
  const labels = job.metadata.labels ?? {};
  const annotations = job.metadata.annotations ?? {};
  const op = labels[LABELS.op];
  if (!isOp(op)) return undefined;
  const attempt = Number.parseInt(labels[LABELS.attempt] ?? '', 10);
  const finished = finishedCondition(job);
  const finishedAtMs =
    timestampMs(annotations[ANNOTATIONS.finishedAt]) ??
    timestampMs(job.status?.completionTime) ??
    timestampMs(finished?.lastTransitionTime);
  const outcome = annotations[ANNOTATIONS.outcome];
  return {
    name: job.metadata.name,
    op,
    attempt: Number.isNaN(attempt) ? 0 : attempt,
    inputsHash: annotations[ANNOTATIONS.inputsHash] ?? '',
    createdAtMs: timestampMs(job.metadata.creationTimestamp) ?? 0,
    finished: finished !== undefined,
    ...(finishedAtMs !== undefined ? { finishedAtMs } : {}),
    bookkept: annotations[ANNOTATIONS.bookkept] === 'true',
    ...(isEvidence(outcome) ? { outcome } : {}),
    deleting: job.metadata.deletionTimestamp !== undefined,
  };
}

/** The annotations bookkeeping writes on a Job once its status write succeeded (DESIGN.md section 5). */
export function bookkeptAnnotations(evidence: Evidence, finishedAt: Date): Record<string, string> {
  return {
    [ANNOTATIONS.bookkept]: 'true',
    [ANNOTATIONS.outcome]: evidence,
    [ANNOTATIONS.finishedAt]: finishedAt.toISOString(),
  };
}

/** Records of one op, newest first (by finish, then creation, then attempt). */
export function newestFirst(records: readonly JobRecord[], op: Op): JobRecord[] {
  return records
    .filter((r) => r.op === op)
    .sort(
      (a, b) =>
        (b.finishedAtMs ?? Number.POSITIVE_INFINITY) - (a.finishedAtMs ?? Number.POSITIVE_INFINITY) ||
        b.createdAtMs - a.createdAtMs ||
        b.attempt - a.attempt,
    );
}
