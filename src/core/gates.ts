import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { Op } from '../schemas/result.ts';
import { failureHistory, retryVerdict } from './backoff.ts';
import type { StartDecision } from './decide.ts';
import { jittered } from './jitter.ts';
import { type JobRecord, newestFirst } from './job-record.ts';

/**
 * Gates between a decision to start a Job and the start (DESIGN.md sections 5 step 5 and 6), in the order
 * of section 5: backoff, approval, pause, dependencies, Job slots, policy validity. Every gate that holds
 * returns a wait with its reason and requeue; waits never count toward backoff.
 */

interface WaitRow {
  /** Seconds until the object is looked at again (the fallback when an event is missed). */
  requeueSeconds: number;
  /** Spread a fleet's retries with the object's jitter (section 6: Job slot waits). */
  jitter: boolean;
}

/** DESIGN.md section 6: each wait reason with its requeue interval. */
export const WAIT_TABLE: Readonly<Record<WaitReason, WaitRow>> = {
  JobActive: { requeueSeconds: 60, jitter: false },
  ImagePullBackOff: { requeueSeconds: 30, jitter: false },
  Paused: { requeueSeconds: 600, jitter: false },
  // The real delay comes from the backoff verdict (`nextAttemptAt`); this is the cap it never exceeds.
  Backoff: { requeueSeconds: 600, jitter: false },
  AwaitingApproval: { requeueSeconds: 600, jitter: false },
  WaitingForDependencies: { requeueSeconds: 30, jitter: false },
  WaitingForJobSlot: { requeueSeconds: 15, jitter: true },
  JobPolicyInvalid: { requeueSeconds: 600, jitter: false },
  SpecInvalid: { requeueSeconds: 600, jitter: false },
  WaitingForClusterOperation: { requeueSeconds: 30, jitter: false },
  WaitingForMachineOperations: { requeueSeconds: 30, jitter: false },
  WaitingForRunLease: { requeueSeconds: 30, jitter: false },
  LockContended: { requeueSeconds: 30, jitter: false },
  WaitingForPreviousAttempt: { requeueSeconds: 30, jitter: false },
  WaitingForForeignJob: { requeueSeconds: 30, jitter: false },
  WaitingForCache: { requeueSeconds: 5, jitter: false },
};

/** A wait: nothing starts; look again after `requeueAfterSeconds` (at `nextAttemptAt`). */
export interface WaitDecision {
  kind: 'wait';
  reason: WaitReason;
  requeueAfterSeconds: number;
  nextAttemptAt: Date;
  /** The op that waits, when a start was held back. */
  op?: Op;
  /** A sentence for the condition message and logs. */
  message: string;
}

/**
 * The wait for `reason` (requeue from WAIT_TABLE, jittered by the UID where the table says so), or until
 * `untilMs` when the wait has a known end (backoff).
 */
export function waitFor(
  reason: WaitReason,
  context: { now: Date; uid: string; message: string; op?: Op; untilMs?: number },
): WaitDecision {
  const row = WAIT_TABLE[reason];
  const tableSeconds = row.jitter ? jittered(row.requeueSeconds, context.uid) : row.requeueSeconds;
  const seconds =
    context.untilMs === undefined
      ? tableSeconds
      : Math.max(0, (context.untilMs - context.now.getTime()) / 1000);
  const requeueAfterSeconds = Math.ceil(seconds);
  return {
    kind: 'wait',
    reason,
    requeueAfterSeconds,
    nextAttemptAt: new Date(context.now.getTime() + requeueAfterSeconds * 1000),
    ...(context.op ? { op: context.op } : {}),
    message: context.message,
  };
}

/** Installation-wide and per-cluster Job slots (`--max-active-jobs`, `--cluster-max-active-jobs`). */
export interface SlotUsage {
  installationActive: number;
  installationLimit: number;
  clusterActive: number;
  clusterLimit: number;
}

/** `--max-active-jobs` default: Jobs per installation (DESIGN.md section 5); src/config.ts reads it. */
export const DEFAULT_MAX_ACTIVE_JOBS = 200;
/** `--cluster-max-active-jobs` default: Jobs per Cluster API cluster (DESIGN.md section 5). */
export const DEFAULT_CLUSTER_MAX_ACTIVE_JOBS = 20;
/** Drift and refresh start only below this share of a limit, so applies and destroys always find a slot. */
export const BACKGROUND_SLOT_SHARE = 0.8;

/** Ops that may use every slot; the others are background work (section 5, step 5). */
const FOREGROUND_OPS: Readonly<Record<Op, boolean>> = {
  apply: true,
  destroy: true,
  drift: false,
  refresh: false,
};

/** True when `op` may take a slot: below the limit, and below 80 % of it for drift and refresh. */
export function hasJobSlot(op: Op, slots: SlotUsage): boolean {
  const share = FOREGROUND_OPS[op] ? 1 : BACKGROUND_SLOT_SHARE;
  return (
    slots.installationActive < slots.installationLimit * share &&
    slots.clusterActive < slots.clusterLimit * share
  );
}

/** The approval state of the plan for the current inputs (DESIGN.md section 11). */
export type ApprovalState = 'none' | 'pending' | 'approved';

/** Everything the gates read besides the decision. */
export interface GateInput {
  now: Date;
  uid: string;
  inputsHash: string;
  records: readonly JobRecord[];
  failedJobsHistoryLimit: number;
  approval: ApprovalState;
  /** Cluster API pause (annotation or Cluster.spec.paused). */
  paused: boolean;
  /** What this object builds on is ready (a machine's cluster infrastructure); a sentence when not. */
  dependencies: { ready: true } | { ready: false; message: string };
  slots: SlotUsage;
  /** Problems of the merged Job policy (`jobsPolicyProblems`); empty when valid. */
  policyProblems: readonly string[];
}

/** The gates' answer: start the Job, or wait. */
export type GateDecision = StartDecision | WaitDecision;

/**
 * An input change is not a retry (DESIGN.md section 4): an apply whose inputs differ from those of the
 * newest finished apply starts without waiting out the backoff the old inputs earned.
 */
function inputsChangedSinceLastApply(records: readonly JobRecord[], inputsHash: string): boolean {
  const newest = newestFirst(records, 'apply').find((r) => r.finished);
  return newest !== undefined && newest.inputsHash !== inputsHash;
}

/**
 * The backoff gate of a retry (DESIGN.md section 4): a contended lock waits 30 s from that run, uncounted;
 * counted failures wait out their delay. Undefined when the retry may start now.
 */
function retryGate(op: Op, input: GateInput): WaitDecision | undefined {
  const context = { now: input.now, uid: input.uid, op };
  const newest = newestFirst(input.records, op).find((r) => r.finished && r.outcome !== undefined);
  const lockFreeAtMs = (newest?.finishedAtMs ?? 0) + WAIT_TABLE.LockContended.requeueSeconds * 1000;
  if (newest?.outcome === 'lock-contended' && lockFreeAtMs > input.now.getTime()) {
    return waitFor('LockContended', {
      ...context,
      untilMs: lockFreeAtMs,
      message: `the state lock is held by a live run; ${op} tries again when it is free`,
    });
  }
  const verdict = retryVerdict(failureHistory(input.records, op), input.failedJobsHistoryLimit);
  if (verdict.kind === 'backoff' && verdict.notBeforeMs > input.now.getTime()) {
    return waitFor('Backoff', {
      ...context,
      untilMs: verdict.notBeforeMs,
      // failures stops at the history limit (only that many are retained): "at least" from there.
      message: `${verdict.failures >= input.failedJobsHistoryLimit ? 'at least ' : ''}${verdict.failures} failed ${op} run(s) in a row; next attempt after ${verdict.delaySeconds}s`,
    });
  }
  return undefined;
}

/** Applies the gates to a decision to start (DESIGN.md section 5, step 5), in order; first hold wins. */
export function applyGates(start: StartDecision, input: GateInput): GateDecision {
  const { op } = start;
  const context = { now: input.now, uid: input.uid, op };

  const isRetry = !(op === 'apply' && inputsChangedSinceLastApply(input.records, input.inputsHash));
  if (isRetry) {
    const retryWait = retryGate(op, input);
    if (retryWait) return retryWait;
  }
  if (op === 'apply' && input.approval === 'pending') {
    return waitFor('AwaitingApproval', {
      ...context,
      message: 'the plan waits for approval: set spec.approved and spec.approvedBy on its TerraformPlan',
    });
  }
  if (input.paused) {
    return waitFor('Paused', {
      ...context,
      message: 'Cluster API pause is set; nothing starts until it is lifted',
    });
  }
  if (!input.dependencies.ready) {
    return waitFor('WaitingForDependencies', { ...context, message: input.dependencies.message });
  }
  if (!hasJobSlot(op, input.slots)) {
    return waitFor('WaitingForJobSlot', {
      ...context,
      message: `Job slots in use: ${input.slots.installationActive}/${input.slots.installationLimit} installation, ${input.slots.clusterActive}/${input.slots.clusterLimit} cluster`,
    });
  }
  const [problem] = input.policyProblems;
  if (problem !== undefined) return waitFor('JobPolicyInvalid', { ...context, message: problem });
  return start;
}
