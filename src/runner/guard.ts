import { comparePlanDigest } from '../core/digest.ts';
import type { PlanSummary } from '../schemas/result.ts';
import type { ApplyPolicy } from '../schemas/run-config.ts';

/**
 * The destructive guard (DESIGN.md sections 2 and 11): whether `apply` may apply the plan it just saved.
 * First match wins:
 *   1. no changes                      -> apply   (needs no approval)
 *   2. an expected digest, same plan    -> apply   (approved)
 *   3. an expected digest, other plan   -> plan-changed (apply nothing)
 *   4. Manual policy                    -> blocked (every change waits)
 *   5. Automatic, delete or replace     -> blocked
 *   6. otherwise                        -> apply
 */
export type GuardDecision =
  | { kind: 'apply'; reason: 'NoChanges' | 'Approved' | 'NotDestructive' }
  | { kind: 'blocked'; reason: 'ManualPolicy' | 'Destructive' }
  | { kind: 'plan-changed'; reason: 'DigestMismatch' };

/** Inputs of the guard. */
export interface GuardInput {
  plan: PlanSummary;
  /** Number of planned changes that are not no-op or read. */
  changeCount: number;
  policy: ApplyPolicy;
  expectedDigest?: string;
}

/** Decides what to do with a saved plan; pure. */
export function decideGuard(input: GuardInput): GuardDecision {
  if (input.changeCount === 0) return { kind: 'apply', reason: 'NoChanges' };
  const digest = comparePlanDigest(input.expectedDigest, input.plan.digest);
  if (digest.kind === 'same') return { kind: 'apply', reason: 'Approved' };
  if (digest.kind === 'changed') return { kind: 'plan-changed', reason: 'DigestMismatch' };
  if (input.policy === 'Manual') return { kind: 'blocked', reason: 'ManualPolicy' };
  if (input.plan.destructive === true) return { kind: 'blocked', reason: 'Destructive' };
  return { kind: 'apply', reason: 'NotDestructive' };
}
