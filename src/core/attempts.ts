import type { Attempts, OpAttemptsStatus } from '../schemas/kinds/status.ts';
import { OPS, type Op } from '../schemas/result.ts';
import { compactState, foldRun, NO_RETRIES, type RetryState, retryStateOf } from './backoff.ts';
import { EVIDENCE, type Evidence } from './classify.ts';
import type { JobRecord } from './job-record.ts';
import { timestampMs } from './views.ts';

/**
 * `status.attempts.<op>` (DESIGN.md sections 4 and 9): the highest attempt each op started and the retry
 * accounting of its runs, kept in the object so that no deletion of a Job (pruning, the controller's own
 * late-deadline delete, a person's `kubectl delete job`) erases a failure or lets a Job name be used twice.
 * Bookkeeping folds each run in once: `recorded` is the highest attempt already folded, and attempts of
 * one op only grow, so a step repeated after a crash never counts a run twice.
 */

/** One op's attempts as the core reads them. */
export interface OpAttempts extends RetryState {
  /** The highest attempt started (its Job may be gone). */
  last: number;
  /** The highest attempt whose run is folded into the retry state. */
  recorded: number;
}

const EMPTY: OpAttempts = { ...NO_RETRIES, last: 0, recorded: 0 };

function isEvidence(value: string | undefined): value is Evidence {
  return (EVIDENCE as readonly string[]).includes(value ?? '');
}

/** Reads one op's attempts from the status; undefined when the object never recorded any. */
export function readOpAttempts(status: OpAttemptsStatus | undefined): OpAttempts | undefined {
  if (status === undefined) return undefined;
  const failedAtMs = timestampMs(status.failedAt);
  const interruptedAtMs = timestampMs(status.interruptedAt);
  const lockContendedAtMs = timestampMs(status.lockContendedAt);
  return {
    last: status.last,
    recorded: status.recorded,
    ...(isEvidence(status.newest) ? { newest: status.newest } : {}),
    failures: status.failures,
    interruptions: status.interruptions,
    lockContentions: status.lockContentions,
    ...(failedAtMs !== undefined ? { failedAtMs } : {}),
    ...(interruptedAtMs !== undefined ? { interruptedAtMs } : {}),
    ...(lockContendedAtMs !== undefined ? { lockContendedAtMs } : {}),
  };
}

/** Writes one op's attempts as the status stores them (times in RFC 3339, whole milliseconds). */
export function writeOpAttempts(attempts: OpAttempts): OpAttemptsStatus {
  const time = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  const failedAt = time(attempts.failedAtMs);
  const interruptedAt = time(attempts.interruptedAtMs);
  const lockContendedAt = time(attempts.lockContendedAtMs);
  return {
    last: attempts.last,
    recorded: attempts.recorded,
    ...(attempts.newest ? { newest: attempts.newest } : {}),
    failures: attempts.failures,
    interruptions: attempts.interruptions,
    lockContentions: attempts.lockContentions,
    ...(failedAt ? { failedAt } : {}),
    ...(interruptedAt ? { interruptedAt } : {}),
    ...(lockContendedAt ? { lockContendedAt } : {}),
  };
}

/**
 * The retry state of `op`: the stored one, plus the bookkept Jobs it has not folded in yet (all of them for
 * an object that stored none).
 */
export function retryStateFor(
  records: readonly JobRecord[],
  op: Op,
  stored: OpAttempts | undefined,
): RetryState {
  if (stored === undefined) return retryStateOf(records, op);
  const unfolded = records.filter((r) => r.op === op && r.attempt > stored.recorded);
  const { last: _last, recorded: _recorded, ...state } = stored;
  return retryStateOf(unfolded, op, state);
}

/** The retry states of every op, as the decision and the gates read them. */
export function retryStatesOf(
  records: readonly JobRecord[],
  attempts: Attempts | undefined,
): Readonly<Record<Op, RetryState>> {
  return Object.fromEntries(
    OPS.map((op) => [op, retryStateFor(records, op, readOpAttempts(attempts?.[op]))]),
  ) as Record<Op, RetryState>;
}

/**
 * `attempt` of the next Job of `op` (DESIGN.md section 9): one more than the highest attempt among the
 * retained Jobs and the highest ever started, so a Job name is never used twice for an object's op.
 */
export function nextAttemptOf(records: readonly JobRecord[], op: Op, attempts: Attempts | undefined): number {
  const retained = records.filter((r) => r.op === op).reduce((highest, r) => Math.max(highest, r.attempt), 0);
  return 1 + Math.max(retained, attempts?.[op]?.last ?? 0);
}

/** The attempts after `attempt` of `op` was started. */
export function withStarted(attempts: Attempts | undefined, op: Op, attempt: number): Attempts {
  const current = readOpAttempts(attempts?.[op]) ?? EMPTY;
  return { ...attempts, [op]: writeOpAttempts({ ...current, last: Math.max(current.last, attempt) }) };
}

/** One run to record: its op, attempt, evidence and finish. */
export interface RecordedAttempt {
  op: Op;
  attempt: number;
  evidence: Evidence;
  finishedAtMs: number;
}

/**
 * The attempts after bookkeeping `run`, folded in unless an earlier write already did (its attempt is not
 * above `recorded`). `records` seed an object that stored none, so nothing retained is forgotten.
 */
export function withRecorded(
  attempts: Attempts | undefined,
  records: readonly JobRecord[],
  run: RecordedAttempt,
): Attempts {
  const stored = readOpAttempts(attempts?.[run.op]);
  const base: OpAttempts = stored ?? {
    ...retryStateOf(
      records.filter((r) => r.attempt < run.attempt),
      run.op,
    ),
    last: 0,
    recorded: 0,
  };
  if (run.attempt <= base.recorded) return { ...attempts, [run.op]: writeOpAttempts(base) };
  const { last, recorded: _recorded, ...state } = base;
  const folded = compactState(foldRun(state, { evidence: run.evidence, finishedAtMs: run.finishedAtMs }));
  return {
    ...attempts,
    [run.op]: writeOpAttempts({
      ...folded,
      last: Math.max(last, run.attempt),
      recorded: run.attempt,
    }),
  };
}
