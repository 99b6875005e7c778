import type { JobSlotUsage } from '../adapters/redis/job-slots.ts';
import type { Unknown } from '../adapters/redis/unknown.ts';
import type { PlanSituation } from '../core/approval.ts';
import { findCondition } from '../core/conditions.ts';
import { decideOp, type StartDecision } from '../core/decide.ts';
import { applyGates, type WaitDecision, waitFor } from '../core/gates.ts';
import type { JobRecord } from '../core/job-record.ts';
import { jobsPolicyProblems } from '../schemas/kinds/jobs-policy.ts';
import type { StepContext } from './context.ts';

/**
 * The decision of a step (DESIGN.md sections 3 and 5 step 5): DecideOp (src/core/decide.ts) over the live
 * snapshot, then the gates (src/core/gates.ts) with the facts only the shell can read: Job slot usage
 * (Redis), the owning cluster's readiness, the merged Job policy.
 */

export type NextMove =
  | { kind: 'watch'; record: JobRecord }
  | { kind: 'finalize' }
  | { kind: 'start'; start: StartDecision }
  | { kind: 'wait'; wait: WaitDecision }
  | { kind: 'idle'; requeueAfterSeconds: number }
  | { kind: 'spec-invalid'; wait: WaitDecision };

/** Decides the next move. `slotUsage` is asked only when a start is possible (one Redis call). */
export async function decideNext(
  context: StepContext,
  records: readonly JobRecord[],
  plans: PlanSituation,
  slotUsage: () => Promise<JobSlotUsage>,
): Promise<NextMove | Unknown> {
  const { snap, now, policy } = context;
  const spec = snap.spec;
  const status = context.draft;
  if (!spec) {
    return {
      kind: 'spec-invalid',
      wait: waitFor('SpecInvalid', {
        now,
        uid: snap.uid,
        message: snap.specProblem ?? 'the spec does not parse',
      }),
    };
  }
  const decision = decideOp({
    now,
    uid: snap.uid,
    deleting: snap.object.metadata.deletionTimestamp !== undefined,
    inputsHash: snap.inputsHash,
    ...(status.appliedInputsHash !== undefined ? { appliedInputsHash: status.appliedInputsHash } : {}),
    ...(status.lastSuccess ? { lastSuccess: status.lastSuccess } : {}),
    hasRun: status.lastRun !== undefined,
    driftDetected: findCondition(status.conditions, 'DriftDetected')?.status === 'True',
    records,
    ...(plans.approved ? { approvedPlan: plans.approved } : {}),
    driftCheck: spec.driftCheck,
    ...(spec.refresh?.interval ? { refreshInterval: spec.refresh.interval } : {}),
    failedJobsHistoryLimit: policy.failedJobsHistoryLimit,
  });
  switch (decision.kind) {
    case 'watch': {
      const record = records.find((r) => r.name === decision.job);
      return record
        ? { kind: 'watch', record }
        : { kind: 'idle', requeueAfterSeconds: decision.requeueAfterSeconds };
    }
    case 'finalize':
      return { kind: 'finalize' };
    case 'idle':
      return { kind: 'idle', requeueAfterSeconds: decision.requeueAfterSeconds };
    case 'start':
      break;
  }
  const usage = await slotUsage();
  if (usage.kind === 'unknown') return usage;
  const cluster = snap.owningCluster;
  // Machines and pools build on their cluster's infrastructure; a destroy never waits for it.
  const dependencies =
    decision.op !== 'destroy' && cluster !== undefined && !cluster.ready
      ? { ready: false as const, message: `TerraformCluster ${cluster.name} is not ready yet` }
      : { ready: true as const };
  const gated = applyGates(decision, {
    now,
    uid: snap.uid,
    inputsHash: snap.inputsHash,
    records,
    failedJobsHistoryLimit: policy.failedJobsHistoryLimit,
    approval: plans.approval,
    paused: snap.paused,
    dependencies,
    slots: {
      installationActive: usage.installation,
      installationLimit: context.deps.config.maxActiveJobs,
      clusterActive: usage.cluster ?? 0,
      clusterLimit: context.deps.config.clusterMaxActiveJobs,
    },
    policyProblems: jobsPolicyProblems(policy),
  });
  return gated.kind === 'wait' ? { kind: 'wait', wait: gated } : { kind: 'start', start: gated };
}
