import type { PlanPhase, TerraformPlan } from '../schemas/kinds/terraform-plan.ts';
import type { ApprovedPlan } from './decide.ts';
import type { ApprovalState } from './gates.ts';

/**
 * The approval state of an object from its TerraformPlans (DESIGN.md section 11): one live plan per
 * target; a plan for older inputs is superseded by the input change; approved means `spec.approved` on a
 * plan that is still Pending or Approved.
 */

/** Phases in which a plan can still be applied. */
const LIVE_PHASES: ReadonlySet<PlanPhase> = new Set(['Pending', 'Approved']);

function phaseOf(plan: TerraformPlan): PlanPhase {
  return plan.status?.phase ?? 'Pending';
}

/** What the object's plans mean for its next apply. */
export interface PlanSituation {
  approval: ApprovalState;
  /** The approved plan for the current inputs, when there is one. */
  approved?: ApprovedPlan;
  /** The live plan for the current inputs (`status.pendingPlanRef`), if any. */
  live?: string;
  /** Live plans bound to other inputs: the shell marks them `Superseded`. */
  supersede: string[];
}

/** Reads an object's TerraformPlans (those whose targetRef.uid is the object's UID). */
export function planSituation(
  plans: readonly TerraformPlan[],
  targetUid: string,
  inputsHash: string,
): PlanSituation {
  const live = plans.filter((p) => p.spec.targetRef.uid === targetUid && LIVE_PHASES.has(phaseOf(p)));
  const current = live
    .filter((p) => p.spec.inputsHash === inputsHash)
    .sort((a, b) =>
      (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''),
    )[0];
  const supersede = live.filter((p) => p !== current).map((p) => p.metadata.name);
  if (!current) return { approval: 'none', supersede };
  if (current.spec.approved) {
    return {
      approval: 'approved',
      approved: { name: current.metadata.name, digest: current.spec.digest },
      live: current.metadata.name,
      supersede,
    };
  }
  return { approval: 'pending', live: current.metadata.name, supersede };
}
