import { type Bookkeeping, jobsToBookkeep, planBookkeeping, recordLostActiveJob } from '../bookkeeping.ts';
import type { RunEvent } from '../event-spec.ts';
import type { JobRecord } from '../job-record.ts';
import { plansAfterBookkeeping } from '../plan-situation.ts';
import type { PlanWrite } from '../step-plan.ts';
import type { Base, Planning } from './context.ts';

/**
 * Bookkeeping (DESIGN.md section 5 step 3, section 7): every finished Job not yet recorded, the Job whose
 * deadline this step enforces with them, and what the records leave: a lost active Job, the plans.
 */
export function bookkeepingOf(
  planning: Planning,
  finished: ReturnType<typeof jobsToBookkeep>,
  enforced: JobRecord | undefined,
): Bookkeeping | undefined {
  const { snap, facts, redactor } = planning;
  const toBookkeep = enforced ? jobsToBookkeep(snap, new Set([enforced.name])) : finished;
  return toBookkeep.length > 0
    ? planBookkeeping(
        {
          snap,
          now: facts.now,
          pods: facts.pods ?? [],
          redactor,
          status: snap.status,
          ...(enforced ? { deadlineEnforced: new Set([enforced.name]) } : {}),
          ...(facts.refusedOutputs !== undefined ? { refusedOutputs: facts.refusedOutputs } : {}),
        },
        toBookkeep,
      )
    : undefined;
}

/** Bookkeeping, a lost active Job, and the plans as this step leaves them (C18, C19). */
export function baseOf(planning: Planning, bookkeeping: Bookkeeping | undefined): Base {
  const { snap, facts } = planning;
  let status = bookkeeping?.status ?? snap.status;
  const events: RunEvent[] = [...(bookkeeping?.events ?? [])];
  const lost = recordLostActiveJob(snap, status, facts.now, planning.policy.activeDeadlineSeconds);
  if (lost) {
    status = lost.status;
    events.push(...lost.events);
  }
  const situation = plansAfterBookkeeping({
    ...(snap.pendingPlan ? { pendingPlan: snap.pendingPlan } : {}),
    uid: snap.uid,
    inputsHash: snap.inputsHash,
    changes: bookkeeping?.plans ?? [],
    status,
  });
  const planWrites: PlanWrite[] = [...(bookkeeping?.plans ?? [])];
  const pending = snap.pendingPlan;
  if (pending && situation.supersede.includes(pending.metadata.name)) {
    planWrites.push({
      kind: 'phase',
      plan: pending,
      phase: 'Superseded',
      job: '',
      message: 'superseded: the inputs changed',
    });
    const next = { ...status };
    delete next.pendingPlanRef;
    status = next;
  }
  return {
    planning,
    bookkeeping,
    status,
    events,
    lostRunSecrets: lost ? [lost.runSecret] : [],
    planWrites: planWrites.map((write) =>
      write.kind === 'phase' ? { ...write, message: planning.redactor.redact(write.message) } : write,
    ),
    records: bookkeeping?.records ?? snap.records,
    situation,
  };
}
