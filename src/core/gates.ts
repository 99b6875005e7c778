import type { Op } from '../schemas/result.ts';
import {
  historyOf,
  LOCK_CONTENTION_ALLOWANCE,
  type RetryState,
  retryStateOf,
  retryVerdict,
} from './backoff.ts';
import type { CapiWait } from './cluster-api.ts';
import type { StartDecision } from './decide.ts';
import { type JobRecord, newestFirst } from './job-record.ts';
import { hasJobSlot, type SlotUsage } from './slot-shares.ts';
import { WAIT_TABLE, type WaitDecision, waitFor } from './wait-table.ts';

/**
 * Gates between a decision to start a Job and the start (DESIGN.md sections 5 step 5 and 6), in the order
 * of section 5: backoff, approval, pause, dependencies, Job slots, policy validity. Every gate that holds
 * returns a wait with its reason (src/core/wait-table.ts); waits never count toward backoff. Wait messages
 * name the cause, never a count or a time, so a wait is written once (section 2).
 */

/** The approval state of the plan for the current inputs (DESIGN.md section 11). */
export type ApprovalState = 'none' | 'pending' | 'approved';

/** Everything the gates read besides the decision. */
export interface GateInput {
  now: Date;
  uid: string;
  inputsHash: string;
  records: readonly JobRecord[];
  /**
   * The retry accounting of the decided op (`status.attempts`, src/core/attempts.ts); computed from
   * `records` when absent.
   */
  retries?: RetryState;
  failedJobsHistoryLimit: number;
  approval: ApprovalState;
  /** Cluster API pause (annotation or Cluster.spec.paused). */
  paused: boolean;
  /**
   * What this object builds on is ready (a machine's cluster infrastructure, its Cluster API owner and
   * bootstrap data); the wait reason (default `WaitingForDependencies`) and a sentence when not.
   */
  dependencies: { ready: true } | { ready: false; reason?: DependencyWait; message: string };
  slots: SlotUsage;
  /** Problems of the merged Job policy (`jobsPolicyProblems`); empty when valid. */
  policyProblems: readonly string[];
}

/** The waits of the dependency gate. */
export type DependencyWait = 'WaitingForDependencies' | CapiWait['reason'];

/** The gates' answer: start the Job, or wait. */
export type GateDecision = StartDecision | WaitDecision;

/**
 * An input change is not a retry (DESIGN.md section 4): an apply or a destroy whose inputs differ from those
 * of the newest finished Job of the same op starts without waiting out the backoff the old inputs earned (a
 * deleting object's spec stays editable, and fixing what failed its destroy must not wait up to 10 minutes).
 * Drift checks and refreshes run the applied inputs; a change to them is an apply.
 */
function inputsChangedSinceLastRun(op: Op, records: readonly JobRecord[], inputsHash: string): boolean {
  if (op !== 'apply' && op !== 'destroy') return false;
  const newest = newestFirst(records, op).find((r) => r.finished);
  return newest !== undefined && newest.inputsHash !== inputsHash;
}

/**
 * The backoff gate of a retry (DESIGN.md section 4): a lock contended by a live pod of this object waits
 * 30 s from that run, uncounted (up to its allowance in a row); counted failures wait out their delay.
 * Undefined when the retry may start now.
 */
function retryGate(op: Op, input: GateInput): WaitDecision | undefined {
  const context = { now: input.now, uid: input.uid, op };
  const retries = input.retries ?? retryStateOf(input.records, op);
  const contended =
    retries.newest === 'lock-contended' &&
    retries.lockContentions < LOCK_CONTENTION_ALLOWANCE &&
    retries.lockContendedAtMs !== undefined;
  const lockFreeAtMs = (retries.lockContendedAtMs ?? 0) + WAIT_TABLE.LockContended.requeueSeconds * 1000;
  if (contended && lockFreeAtMs > input.now.getTime()) {
    return waitFor('LockContended', {
      ...context,
      untilMs: lockFreeAtMs,
      message: `the state lock is held by another live pod of this object; ${op} tries again when it is free`,
    });
  }
  const verdict = retryVerdict(historyOf(retries), input.failedJobsHistoryLimit);
  if (verdict.kind === 'backoff' && verdict.notBeforeMs > input.now.getTime()) {
    return waitFor('Backoff', {
      ...context,
      untilMs: verdict.notBeforeMs,
      // failures stops at the history limit (from there the delay is the cap): "at least" from there.
      message: `${verdict.failures >= input.failedJobsHistoryLimit ? 'at least ' : ''}${verdict.failures} failed ${op} run(s) in a row; next attempt after ${verdict.delaySeconds}s`,
    });
  }
  return undefined;
}

/** Applies the gates to a decision to start (DESIGN.md section 5, step 5), in order; first hold wins. */
export function applyGates(start: StartDecision, input: GateInput): GateDecision {
  const { op } = start;
  const context = { now: input.now, uid: input.uid, op };

  const isRetry = !inputsChangedSinceLastRun(op, input.records, input.inputsHash);
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
    const reason = input.dependencies.reason ?? 'WaitingForDependencies';
    return waitFor(reason, { ...context, message: input.dependencies.message });
  }
  if (!hasJobSlot(op, input.slots)) {
    return waitFor('WaitingForJobSlot', {
      ...context,
      message: `every Job slot ${op} may use is taken (limits: ${input.slots.installationLimit} per installation, ${input.slots.clusterLimit} per cluster)`,
    });
  }
  const [problem] = input.policyProblems;
  if (problem !== undefined) return waitFor('JobPolicyInvalid', { ...context, message: problem });
  return start;
}
