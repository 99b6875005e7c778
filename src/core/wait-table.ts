import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { Op } from '../schemas/result.ts';
import { jittered } from './jitter.ts';

/**
 * The waits of DESIGN.md section 6: each reason with its requeue, and the wait a step records. A wait is
 * written into the status once (section 2: `waitReason` and `nextAttemptAt` are stable while the cause is
 * unchanged), so nothing in it may depend on the clock of the step that found it: `nextAttemptAt` exists
 * only for a wait with a natural end (a backoff, a contended lock), computed from that end in whole seconds;
 * every other wait carries none, and only its requeue, which never reaches the status, counts from now.
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
  CreateContainerConfigError: { requeueSeconds: 30, jitter: false },
  Paused: { requeueSeconds: 600, jitter: false },
  // The real delay comes from the backoff verdict (`nextAttemptAt`); this is the cap it never exceeds.
  Backoff: { requeueSeconds: 600, jitter: false },
  AwaitingApproval: { requeueSeconds: 600, jitter: false },
  WaitingForDependencies: { requeueSeconds: 30, jitter: false },
  // A person labels the Secret; no event about a Secret reaches the object, so this requeue finds it.
  VariablesSecretNotOptedIn: { requeueSeconds: 60, jitter: false },
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

/** A wait: nothing starts; look again after `requeueAfterSeconds`. */
export interface WaitDecision {
  kind: 'wait';
  reason: WaitReason;
  requeueAfterSeconds: number;
  /** The wait's natural end (whole seconds), when it has one: backoff, a contended lock. */
  nextAttemptAt?: Date;
  /** The op that waits, when a start was held back. */
  op?: Op;
  /** A sentence for the condition message and logs; stable while the cause is (never a count or a time). */
  message: string;
}

/**
 * The wait for `reason`: until `untilMs` when the wait has a natural end (then `nextAttemptAt` is that end
 * rounded up to the second, so every step of the same wait names the same instant), otherwise the table's
 * requeue (jittered by the UID where the table says so) and no `nextAttemptAt`.
 */
export function waitFor(
  reason: WaitReason,
  context: { now: Date; uid: string; message: string; op?: Op; untilMs?: number },
): WaitDecision {
  const base = {
    kind: 'wait' as const,
    reason,
    ...(context.op ? { op: context.op } : {}),
    message: context.message,
  };
  if (context.untilMs !== undefined) {
    const endMs = Math.ceil(context.untilMs / 1000) * 1000;
    return {
      ...base,
      requeueAfterSeconds: Math.max(0, Math.ceil((endMs - context.now.getTime()) / 1000)),
      nextAttemptAt: new Date(endMs),
    };
  }
  const row = WAIT_TABLE[reason];
  const seconds = row.jitter ? jittered(row.requeueSeconds, context.uid) : row.requeueSeconds;
  return { ...base, requeueAfterSeconds: Math.ceil(seconds) };
}
