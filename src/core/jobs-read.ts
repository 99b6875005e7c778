import type { TargetStatus } from '../schemas/kinds/target.ts';
import { carriesBlockMove } from './block-move.ts';
import { type PreambleMeta, preamble } from './preamble.ts';
import { suffixKnownWithoutJobs } from './state-identity.ts';
import type { Planned } from './step-plan.ts';

/**
 * Whether a step plans from its object alone, its Jobs unlisted (issue 22: a step about an object at rest
 * costs the object's GET and nothing more). Only the object's read is needed to answer, so the Job list is
 * left out of the snapshot's first reads; the planner asks for it (`read: 'jobs'`) before any decision but
 * an idle rest ({@link idleWithoutJobs}) or the wait the status already records ({@link keptWithoutJobs};
 * a member's cluster operation wait from the lease, src/core/planner/cluster-operation.ts), so every
 * start, watch, bookkeeping, finalize and changed wait plans from a live list as before.
 */

/** What {@link jobsListSkippable} reads of the object. */
export interface JobsEvidence {
  meta: PreambleMeta;
  status: Pick<
    TargetStatus,
    | 'activeJob'
    | 'attempts'
    | 'stateSuffix'
    | 'waitReason'
    // What tells runs on record (src/core/state-identity.ts `suffixKnownWithoutJobs`).
    | 'lastRun'
    | 'lastSuccess'
    | 'appliedGeneration'
  >;
  /** Paths of status fields that do not parse (nothing is planned from such a status). */
  statusUnreadable?: readonly string[];
}

/**
 * True when the object shows nothing of it runs, so a plan made without its Jobs may be the one a listed
 * step makes: no block-move annotation (a start writes it under the version read before its Job is
 * created, and it goes only in a step that read every Job finished and bookkept, after the marks) and no
 * `status.activeJob` (written after the create; a person removing the annotation leaves it); not deleting
 * (a finalize reads the Jobs); a status that parses; and either an idle rest can be planned unlisted
 * ({@link idleWithoutJobs}) or the status records a wait (kept unlisted only when it is planned again
 * unchanged, {@link keptWithoutJobs}). What an unlisted Job could change is covered elsewhere: a Job
 * started concurrently by a step whose lock was lost (Redis failed) is found by the next step that lists,
 * which every other decision is; its end's event and the sweep (DESIGN.md section 8, which lists every Job)
 * step the object with its Jobs listed (`StepOptions.listJobs`), so no result is lost; and no Job is ever
 * started from an unlisted snapshot. Pruning a retained Job past a lowered history limit waits for the
 * object's next listed step. An object without our finalizer is planned by the preamble alone
 * ({@link preambleWithoutJobs}).
 */
export function jobsListSkippable(object: JobsEvidence): boolean {
  const { status } = object;
  if (preamble(object.meta).kind !== 'proceed') return preambleWithoutJobs(object);
  return (
    !carriesBlockMove(object.meta.annotations) &&
    status.activeJob === undefined &&
    object.meta.deletionTimestamp === undefined &&
    object.statusUnreadable === undefined &&
    (idleWithoutJobs(status) || status.waitReason !== undefined)
  );
}

/**
 * Whether the preamble's plan (an object without our finalizer: it is added, or nothing is done; DESIGN.md
 * section 5 step 2) may be made without the Job list: it decides nothing from the Jobs, and the one thing it
 * takes from them, the state suffix its runner setup names (src/core/runner-setup.ts), is the one the Jobs
 * would give ({@link suffixKnownWithoutJobs}) when the status parses. The usual case is an object's very first
 * step (issue 22: a new object's first step costs no Job list).
 */
function preambleWithoutJobs(object: JobsEvidence): boolean {
  return object.statusUnreadable === undefined && suffixKnownWithoutJobs(object.status);
}

/**
 * An idle rest planned without the Job list is the listed one when the retry state is stored
 * (`status.attempts`, every bookkept run folded in, so the decision's retries do not come from the
 * records) and the state suffix recorded (not learnt from a Job's annotation).
 */
export function idleWithoutJobs(status: Pick<TargetStatus, 'attempts' | 'stateSuffix'>): boolean {
  return status.attempts !== undefined && status.stateSuffix !== undefined;
}

/**
 * What a start decided without the Job list may keep of its plan: the Job slots' read (Redis, no API
 * request), or a wait that writes nothing, i.e. the very wait a listed step wrote into the status (no
 * status change, no Event, no prune, no pod release or delete, no lost run's Secret, no block-move
 * change). Anything else, a start or a different wait, is planned again from the listed Jobs (undefined),
 * so a wait is only ever written into the status from a listed step and never alternates with the wait an
 * unlisted plan would find (the retry gate, for one, reads the records). Issue 22: a wait woken by its
 * safety requeue costs one read.
 */
export function keptWithoutJobs(planned: Planned): Planned | undefined {
  if (planned.kind === 'read') return planned.read === 'slots' ? planned : undefined;
  const quiet =
    planned.outcome.action === 'waiting' &&
    planned.move.kind === 'rest' &&
    planned.status === undefined &&
    planned.spec === undefined &&
    planned.blockMove === undefined &&
    planned.plans.length === 0 &&
    planned.events.length === 0 &&
    planned.prune.length === 0 &&
    planned.releasePods.length === 0 &&
    planned.lostRunSecrets.length === 0 &&
    planned.deletePods.length === 0 &&
    planned.bookkept.length === 0;
  return quiet ? planned : undefined;
}
