/**
 * The plan-digest comparison of DESIGN.md section 11. The runner computes digests (src/runner/plan-digest.ts:
 * sorted `address|actions|HMAC` lines, then SHA-256); the controller only compares them, and a digest
 * reveals nothing about sensitive values.
 */

/** The verdict on a fresh plan against the digest an approval was given for. */
export type DigestComparison =
  | { kind: 'no-expectation'; reason: 'NoApprovedPlan' }
  | { kind: 'same'; reason: 'PlanMatches' }
  | { kind: 'changed'; reason: 'PlanChanged' };

/**
 * Compares the digest of the plan just made with the approved one (DESIGN.md section 11): same → apply the
 * saved plan; different → apply nothing, result `plan-changed`.
 */
export function comparePlanDigest(expected: string | undefined, actual: string): DigestComparison {
  if (expected === undefined || expected === '') return { kind: 'no-expectation', reason: 'NoApprovedPlan' };
  return expected === actual
    ? { kind: 'same', reason: 'PlanMatches' }
    : { kind: 'changed', reason: 'PlanChanged' };
}
