import type { JobView } from './views.ts';

/**
 * The decisions a Job was started with that its run config carries besides the spec (DESIGN.md sections 11
 * and 12), kept as annotations on the Job: a step that adopts the Job after a crash rebuilds the same
 * per-run Secret from them, and a force-unlock id found on any Job is never passed again.
 */

/** What the decision adds to the run config. */
export interface RunDecisions {
  /** The digest of the approved plan the apply must run (section 11). */
  expectedPlanDigest?: string;
  /** The stale state lock the Job force-unlocks after `init` (section 12). */
  forceUnlockId?: string;
}

export const RUN_DECISION_ANNOTATIONS = {
  expectedPlanDigest: 'captf.io/expected-plan-digest',
  forceUnlockId: 'captf.io/force-unlock-id',
} as const;

/** The annotations that record `decisions` on a Job. */
export function decisionAnnotations(decisions: RunDecisions): Record<string, string> {
  return {
    ...(decisions.expectedPlanDigest
      ? { [RUN_DECISION_ANNOTATIONS.expectedPlanDigest]: decisions.expectedPlanDigest }
      : {}),
    ...(decisions.forceUnlockId ? { [RUN_DECISION_ANNOTATIONS.forceUnlockId]: decisions.forceUnlockId } : {}),
  };
}

/** The decisions a Job was started with. */
export function decisionsOf(job: JobView): RunDecisions {
  const annotations = job.metadata.annotations ?? {};
  const expectedPlanDigest = annotations[RUN_DECISION_ANNOTATIONS.expectedPlanDigest];
  const forceUnlockId = annotations[RUN_DECISION_ANNOTATIONS.forceUnlockId];
  return {
    ...(expectedPlanDigest ? { expectedPlanDigest } : {}),
    ...(forceUnlockId ? { forceUnlockId } : {}),
  };
}
