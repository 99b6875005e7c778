import { CronExpressionParser } from 'cron-parser';
import { parseDurationSeconds } from '../schemas/kinds/duration.ts';
import { DEFAULT_DRIFT_INTERVAL, type DriftCheck } from '../schemas/kinds/spec.ts';
import type { LastSuccess } from '../schemas/kinds/status.ts';
import type { Op } from '../schemas/result.ts';
import { type RetryState, retryStateOf } from './backoff.ts';
import { EVIDENCE_TABLE } from './classify.ts';
import { jittered } from './jitter.ts';
import type { JobRecord } from './job-record.ts';
import { timestampMs } from './views.ts';
import { WAIT_TABLE } from './wait-table.ts';

/**
 * DecideOp (DESIGN.md section 3): which op an object needs now, as a pure function of the object, its Jobs
 * and the clock. The rows are checked in the order of the table; the first match wins. The gates
 * (src/core/gates.ts) then decide whether a start may happen now.
 */

/** Reasons of a decision to start a Job (section 3, rows 2-9). */
export type StartReason =
  | 'Deleting'
  | 'NoState'
  | 'InputsChanged'
  | 'LastApplyFailed'
  | 'PlanApproved'
  | 'DriftRemediation'
  | 'RefreshDue'
  | 'DriftDue';

/** Start a Job for `op`; `plan` is the approved plan an apply must run with (section 11). */
export interface StartDecision {
  kind: 'start';
  op: Op;
  reason: StartReason;
  plan?: ApprovedPlan;
}

/** The outcome of DecideOp. */
export type OpDecision =
  | { kind: 'watch'; reason: 'JobActive'; job: string; requeueAfterSeconds: number }
  | { kind: 'finalize'; reason: 'DeletingWithoutState' | 'DeletingForMove' }
  | StartDecision
  | { kind: 'idle'; reason: 'UpToDate'; requeueAfterSeconds: number };

/** An approved TerraformPlan for the current inputs. */
export interface ApprovedPlan {
  name: string;
  digest: string;
}

/** The snapshot DecideOp reads. Times are the object's status timestamps; `now` is injected. */
export interface DecideInput {
  now: Date;
  uid: string;
  /** `metadata.deletionTimestamp` is set. */
  deleting: boolean;
  /**
   * `clusterctl move` deletes this copy after making the target's (annotation
   * `clusterctl.cluster.x-k8s.io/delete-for-move`): the infrastructure moved, nothing is destroyed.
   */
  deletingForMove?: boolean;
  /** The current inputs hash (src/core/inputs-hash.ts). */
  inputsHash: string;
  /** `status.appliedInputsHash`: the inputs of the newest successful apply. */
  appliedInputsHash?: string;
  lastSuccess?: LastSuccess;
  /** `status.lastRun` exists: some Job of this object was bookkept at least once. */
  hasRun: boolean;
  /**
   * What the object's state Secret says, read only for a deleting object that records neither a successful
   * apply nor a successful destroy (default backend): true when it holds managed resources (its status was
   * lost, not its infrastructure), when it cannot be read or is encrypted, or when it is lost while the object
   * shows it was provisioned (a person decides: DESIGN.md section 3); false when it provably holds nothing.
   * Undefined when not read (another backend keeps its state out of sight).
   */
  stateMayHoldResources?: boolean;
  /** The DriftDetected condition is True. */
  driftDetected: boolean;
  /** Every Job of the object (retained history). */
  records: readonly JobRecord[];
  /**
   * The apply's retry accounting (`status.attempts.apply` with the retained Jobs folded in,
   * src/core/attempts.ts); computed from `records` when absent.
   */
  applyRetries?: RetryState;
  /** An approved TerraformPlan for the current inputs, if one waits. */
  approvedPlan?: ApprovedPlan;
  driftCheck: DriftCheck;
  /** `spec.refresh.interval`; absent means no refresh. */
  refreshInterval?: string;
  failedJobsHistoryLimit: number;
}

/** How often an object without any schedule is looked at anyway (the sweep runs more often). */
export const IDLE_REQUEUE_MAX_SECONDS = 3600;

function latest(...values: (number | undefined)[]): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length === 0 ? undefined : Math.max(...defined);
}

/** When the next refresh is due (whole ms), jittered; undefined when no refresh is configured. */
export function refreshDueMs(input: DecideInput): number | undefined {
  if (input.refreshInterval === undefined) return undefined;
  const base = latest(timestampMs(input.lastSuccess?.refresh), timestampMs(input.lastSuccess?.apply));
  if (base === undefined) return undefined;
  return base + Math.ceil(jittered(parseDurationSeconds(input.refreshInterval), input.uid) * 1000);
}

/**
 * When the next drift check is due (ms): the interval (default 30m) jittered by the UID, or the first cron
 * occurrence (UTC) after the newest drift check or apply. Undefined when disabled, before the first apply, or
 * for a schedule that does not parse (the schema rejects those; the step reports `SpecInvalid`).
 */
export function driftDueMs(input: DecideInput): number | undefined {
  if (!input.driftCheck.enabled) return undefined;
  const base = latest(timestampMs(input.lastSuccess?.drift), timestampMs(input.lastSuccess?.apply));
  if (base === undefined) return undefined;
  if (input.driftCheck.schedule !== undefined) {
    try {
      const cron = CronExpressionParser.parse(input.driftCheck.schedule, {
        currentDate: new Date(base),
        tz: 'UTC',
      });
      return cron.next().getTime();
    } catch {
      return undefined;
    }
  }
  const interval = input.driftCheck.interval ?? DEFAULT_DRIFT_INTERVAL;
  return base + Math.ceil(jittered(parseDurationSeconds(interval), input.uid) * 1000);
}

/** What row 1 of section 3 reads: whether anything ran, and the newest successes. */
export type StateEvidence = Pick<DecideInput, 'hasRun' | 'records' | 'lastSuccess'>;

/**
 * Nothing is left to destroy: nothing ever ran, or the newest destroy succeeded after the newest apply.
 * Reads no spec, so a deleting object whose spec does not parse is finalized by the same rule.
 */
export function withoutState(input: StateEvidence): boolean {
  const everRan = input.hasRun || input.records.length > 0 || input.lastSuccess?.apply !== undefined;
  if (!everRan) return true;
  const destroyed = timestampMs(input.lastSuccess?.destroy);
  const applied = timestampMs(input.lastSuccess?.apply);
  return destroyed !== undefined && (applied === undefined || destroyed >= applied);
}

/** The newest recorded apply ended in failure or interruption (not blocked, not plan-changed). */
function newestApplyFailed(retries: RetryState): boolean {
  if (retries.newest === undefined) return false;
  const row = EVIDENCE_TABLE[retries.newest];
  return row.result === 'failed' || row.result === 'interrupted';
}

function start(op: Op, reason: StartReason, plan?: ApprovedPlan): StartDecision {
  return { kind: 'start', op, reason, ...(plan && op === 'apply' ? { plan } : {}) };
}

/**
 * DecideOp: rows 0-10 of DESIGN.md section 3, first match wins. A waiting input change pauses drift and
 * refresh by construction: row 4 matches first, and a gated apply never falls through to a lower row.
 * Finished Jobs that are not bookkept yet count as active (row 0), so nothing starts before bookkeeping.
 */
export function decideOp(input: DecideInput): OpDecision {
  const now = input.now.getTime();
  const active = input.records.find((r) => !r.finished || !r.bookkept);
  if (active) {
    return {
      kind: 'watch',
      reason: 'JobActive',
      job: active.name,
      requeueAfterSeconds: WAIT_TABLE.JobActive.requeueSeconds,
    };
  }
  if (input.deleting) {
    if (input.deletingForMove === true) return { kind: 'finalize', reason: 'DeletingForMove' };
    // No apply ever succeeded and the state holds nothing: whatever ran (applies that all failed) left
    // nothing a destroy could find, and a destroy would most often fail as they did.
    const nothingApplied = input.lastSuccess?.apply === undefined && input.stateMayHoldResources === false;
    if (nothingApplied || (withoutState(input) && input.stateMayHoldResources !== true))
      return { kind: 'finalize', reason: 'DeletingWithoutState' };
    return start('destroy', 'Deleting');
  }
  const plan = input.approvedPlan;
  const applyRetries = input.applyRetries ?? retryStateOf(input.records, 'apply');
  if (input.lastSuccess?.apply === undefined) return start('apply', 'NoState', plan);
  if (input.appliedInputsHash !== input.inputsHash) return start('apply', 'InputsChanged', plan);
  if (newestApplyFailed(applyRetries)) return start('apply', 'LastApplyFailed', plan);
  if (plan) return start('apply', 'PlanApproved', plan);
  if (
    input.driftDetected &&
    input.driftCheck.enabled &&
    input.driftCheck.action === 'Remediate' &&
    applyRetries.failures < input.failedJobsHistoryLimit
  ) {
    return start('apply', 'DriftRemediation');
  }
  const refreshAt = refreshDueMs(input);
  if (refreshAt !== undefined && refreshAt <= now) return start('refresh', 'RefreshDue');
  const driftAt = driftDueMs(input);
  if (driftAt !== undefined && driftAt <= now) return start('drift', 'DriftDue');
  const nextMs = Math.min(
    ...[refreshAt, driftAt].filter((v): v is number => v !== undefined),
    now + IDLE_REQUEUE_MAX_SECONDS * 1000,
  );
  return {
    kind: 'idle',
    reason: 'UpToDate',
    requeueAfterSeconds: Math.max(1, Math.ceil((nextMs - now) / 1000)),
  };
}
