import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { TerraformPlan } from '../schemas/kinds/terraform-plan.ts';
import { type PlanSituation, planSituation } from './approval.ts';
import { planName } from './plan-manifest.ts';
import type { PlanChange } from './record-run.ts';

/**
 * The object's plans as the decision of a step must see them (DESIGN.md section 11, C19): after this step's
 * bookkeeping, not as read before it. A plan the bookkeeping moves to Applied or Superseded is no longer
 * live, a plan it creates for the current inputs waits for approval, and an approved plan whose digest a
 * bookkept apply already applied never starts another apply.
 */

/** What the plan situation is computed from: the step's read plus its bookkeeping (if any). */
export interface PlanFacts {
  /** The TerraformPlan named by `status.pendingPlanRef` as read, if it exists. */
  pendingPlan?: TerraformPlan;
  uid: string;
  /** The inputs hash of the live spec. */
  inputsHash: string;
  /** The plan changes this step's bookkeeping writes (none without bookkeeping). */
  changes: readonly PlanChange[];
  /** The status as bookkeeping leaves it (the read status without bookkeeping). */
  status: TargetStatus;
}

/** The pending plan with the phase this step's bookkeeping gives it. */
function afterChanges(plan: TerraformPlan, changes: readonly PlanChange[]): TerraformPlan {
  const moved = changes.find(
    (change) => change.kind === 'phase' && change.plan.metadata.name === plan.metadata.name,
  );
  if (moved?.kind !== 'phase') return plan;
  return { ...plan, status: { ...plan.status, phase: moved.phase } };
}

/**
 * The digest of the newest bookkept run when that run applied successfully: an approved plan of that digest
 * was spent by it (its phase write may have lost a race with a person's edit, DESIGN.md section 7).
 */
function appliedDigest(status: TargetStatus): string | undefined {
  const run = status.lastRun;
  return run?.op === 'apply' && run.result === 'succeeded' ? run.plan?.digest : undefined;
}

/** The plan situation a step decides on (see the module comment). */
export function plansAfterBookkeeping(facts: PlanFacts): PlanSituation {
  const created = facts.changes.find(
    (change) => change.kind === 'create' && change.inputsHash === facts.inputsHash,
  );
  if (created?.kind === 'create') {
    // The plan it replaces is superseded, unless the bookkeeping already writes that (one write, not two).
    const replaced = facts.pendingPlan?.metadata.name;
    const moved = facts.changes.some(
      (change) => change.kind === 'phase' && change.plan.metadata.name === replaced,
    );
    return {
      approval: 'pending',
      live: planName(created.job),
      supersede: replaced !== undefined && !moved && replaced !== planName(created.job) ? [replaced] : [],
    };
  }
  const plans = facts.pendingPlan ? [afterChanges(facts.pendingPlan, facts.changes)] : [];
  const situation = planSituation(plans, facts.uid, facts.inputsHash);
  if (situation.approved === undefined || situation.approved.digest !== appliedDigest(facts.status))
    return situation;
  return { approval: 'none', supersede: situation.supersede };
}
