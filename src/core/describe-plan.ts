import { snapshotRedactor } from './run-inputs.ts';
import type { Snapshot } from './snapshot.ts';
import type { StepOutcome } from './step-outcome.ts';
import type { StepPlan } from './step-plan.ts';

/**
 * A dry run (`POST /reconcile?dryRun=true`, DESIGN.md section 13): the same plan the step would carry out,
 * described instead of done. The answer is the plan's own outcome with a message that says what the step
 * would write and do; nothing is locked, written or scheduled.
 */

function moveSentence(plan: StepPlan): string {
  const move = plan.move;
  switch (move.kind) {
    case 'none':
    case 'rest':
      return plan.outcome.message ?? plan.outcome.reason;
    case 'finalizers':
      if (!move.gone)
        return move.setup === undefined
          ? 'would add the finalizer'
          : `would add the finalizer, then create the plan key${move.setup.identity ? ' and the runner identity' : ''}`;
      return move.state
        ? `would delete the state Secret ${move.state.stateSecret} and its lock Lease if the state holds nothing, then remove the finalizer`
        : 'would remove the finalizer';
    case 'delete-job':
      return `would delete Job ${move.job.name}`;
    case 'watch':
      return `would watch ${move.job.name}${move.adopt ? ' and create its missing per-run Secret' : ''}`;
    case 'start':
      return `would ${move.start.consumeAnnotation ? `remove the annotation ${move.start.consumeAnnotation} and ` : ''}start ${move.start.op} Job ${move.start.name} (attempt ${move.start.attempt}, ${move.start.reason}${move.start.consumeAnnotation ? ', from an empty state' : ''})`;
  }
}

/** The outcome a dry run answers for `plan`, planned from `snap` (its secret values are cut out). */
export function describePlan(plan: StepPlan, snap: Snapshot): StepOutcome {
  const parts: string[] = [];
  if (plan.bookkept.length > 0)
    parts.push(
      `would record ${plan.bookkept.map((run) => `${run.record.name} as ${run.classification.reason}`).join(', ')}`,
    );
  if (plan.prune.length > 0) parts.push(`would prune ${plan.prune.map((job) => job.name).join(', ')}`);
  if (plan.lostRunSecrets.length > 0)
    parts.push(`would delete the lost run's per-run Secret ${plan.lostRunSecrets.join(', ')}`);
  if (plan.deletePods.length > 0)
    parts.push(`would delete the orphaned pod(s) ${plan.deletePods.map((pod) => pod.name).join(', ')}`);
  parts.push(plan.status === undefined ? 'no status change' : 'would write the status');
  parts.push(moveSentence(plan));
  const { observed: _observed, ...outcome } = plan.outcome;
  return { ...outcome, message: snapshotRedactor(snap).redact(`dry run: ${parts.join('; ')}`) };
}
