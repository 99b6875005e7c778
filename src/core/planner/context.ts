import { type EffectiveJobsPolicy, resolveJobsPolicy } from '../../schemas/kinds/jobs-policy.ts';
import type { TargetStatus } from '../../schemas/kinds/target.ts';
import type { Op } from '../../schemas/result.ts';
import type { PlanSituation } from '../approval.ts';
import type { Bookkeeping } from '../bookkeeping.ts';
import { withPausedCondition } from '../conditions.ts';
import type { RunEvent } from '../event-spec.ts';
import type { JobRecord } from '../job-record.ts';
import { mergePatchOf } from '../merge-patch.ts';
import type { StatusContext } from '../move-status.ts';
import type { ObjectRef } from '../object-ref.ts';
import type { Redactor } from '../redaction.ts';
import { snapshotRedactor } from '../run-inputs.ts';
import type { Snapshot } from '../snapshot.ts';
import { jobStateSuffixes, unrecordedStateSuffix } from '../state-identity.ts';
import { type OutcomeExtras, outcomeOf, type StepOutcome, type StepReason } from '../step-outcome.ts';
import type { JobRef, Move, PlanFacts, PlanWrite, RunGuardSpec, StepPlan } from '../step-plan.ts';
import type { JobView } from '../views.ts';
import type { WaitDecision } from '../wait-table.ts';
import { secretSource } from '../wake.ts';

/**
 * What the phases of one plan share (src/core/planner.ts): the planning context made from the facts, the
 * parts decided before the move, and the small builders every phase uses.
 */

/** Shared by the phases of one plan. */
export interface Planning {
  facts: PlanFacts;
  snap: Snapshot;
  redactor: Redactor;
  policy: EffectiveJobsPolicy;
  statusContext: StatusContext;
}

/** The planning context of `facts`: the snapshot, its redactor, its Jobs policy, the status context. */
export function planningOf(facts: PlanFacts): Planning {
  const { snap } = facts;
  const redactor = snapshotRedactor(snap);
  const policy = resolveJobsPolicy(snap.spec?.jobs, snap.owningCluster?.defaultsJobs);
  return {
    facts,
    snap,
    redactor,
    policy,
    statusContext: {
      now: facts.now,
      generation: snap.generation,
      deleting: snap.meta.deletionTimestamp !== undefined,
      redactor,
    },
  };
}

/** The parts of a plan decided before the move. */
export interface Base {
  planning: Planning;
  bookkeeping: Bookkeeping | undefined;
  /** The status after bookkeeping (and a lost active Job, and a superseded plan reference). */
  status: TargetStatus;
  events: RunEvent[];
  planWrites: PlanWrite[];
  /** The per-run Secret of a lost active Job (src/core/bookkeeping.ts `recordLostActiveJob`). */
  lostRunSecrets: string[];
  /** The object's records as they stand once the marks are written. */
  records: JobRecord[];
  situation: PlanSituation;
}

/** How the shell addresses `job`: its name, and the UID and version read (preconditions). */
export function jobRef(job: JobView): JobRef {
  return {
    name: job.metadata.name,
    uid: job.metadata.uid ?? '',
    resourceVersion: job.metadata.resourceVersion ?? '',
  };
}

/** The Redis guards of a run of `op` by `job` (src/step/leases.ts); `clusterName` as its Job names it. */
export function guardOf(
  op: Op,
  job: string,
  activeDeadlineSeconds: number,
  clusterName?: string,
): RunGuardSpec {
  return { op, job, activeDeadlineSeconds, ...(clusterName !== undefined ? { clusterName } : {}) };
}

/** The status to write: `next` with the generation, or undefined when it equals the status read. */
export function changed(current: TargetStatus, next: TargetStatus): TargetStatus | undefined {
  return mergePatchOf(current as Record<string, unknown>, next as Record<string, unknown>) === undefined
    ? undefined
    : next;
}

/** The step's outcome for the object, its message redacted. */
export function outcome(planning: Planning, reason: StepReason, extras: OutcomeExtras = {}): StepOutcome {
  const { message, ...rest } = extras;
  return outcomeOf(planning.snap.ref, reason, {
    ...rest,
    ...(message !== undefined ? { message: planning.redactor.redact(message) } : {}),
  });
}

/** A plan with no writes and no move. */
export function bare(move: Move, result: StepOutcome): StepPlan {
  return {
    kind: 'plan',
    bookkept: [],
    plans: [],
    spec: undefined,
    status: undefined,
    events: [],
    prune: [],
    releasePods: [],
    lostRunSecrets: [],
    deletePods: [],
    move,
    outcome: result,
  };
}

/** The newest Job this step bookkept, for the outcome. */
export function lastJob(base: Base): { job?: string } {
  const job = base.bookkeeping?.runs.at(-1)?.record.name;
  return job !== undefined ? { job } : {};
}

/** The outcome of a wait, saying whether this step bookkept and which Job last. */
export function waitOutcome(base: Base, wait: WaitDecision): StepOutcome {
  return outcome(base.planning, wait.reason, {
    requeueAfterSeconds: wait.requeueAfterSeconds,
    message: wait.message,
    bookkept: base.bookkeeping !== undefined,
    ...lastJob(base),
  });
}

/** A wait woken by the watch event of the Secret `name` of the object's namespace (src/core/wake.ts). */
export function secretWaitOf(ref: ObjectRef, name: string | undefined): Pick<StepOutcome, 'waitsFor'> {
  return name === undefined ? {} : { waitsFor: [secretSource(ref.namespace, name)] };
}

/**
 * `status` with what every status a step writes carries: the Paused condition of the snapshot, and the
 * state suffix a Job of the object carries when the status records none (its start's write was lost).
 */
export function pausedStatus(planning: Planning, status: TargetStatus): TargetStatus {
  return pausedStatusOf(planning.snap, planning.facts.now, status);
}

/** {@link pausedStatus} from the snapshot and clock alone (a start's held wait, `heldOutcome`). */
export function pausedStatusOf(snap: Snapshot, now: Date, status: TargetStatus): TargetStatus {
  const conditions = withPausedCondition(status.conditions ?? [], snap.paused, {
    now,
    generation: snap.generation,
  });
  const suffix = unrecordedStateSuffix(status, jobStateSuffixes(snap.jobs));
  return { ...status, conditions, ...(suffix !== undefined ? { stateSuffix: suffix } : {}) };
}
