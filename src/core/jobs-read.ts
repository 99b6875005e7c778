import type { TargetStatus } from '../schemas/kinds/target.ts';
import { carriesBlockMove } from './block-move.ts';

/**
 * Whether a step plans from its object alone, its Jobs unlisted (issue 22: a step about an object at rest
 * costs the object's GET and nothing more). Only the object's read is needed to answer, so the Job list is
 * left out of the snapshot's first reads; the planner asks for it (`read: 'jobs'`) before any decision but
 * `idle`, so every start, watch, bookkeeping, wait and finalize plans from a live list as before.
 */

/** What {@link jobsListSkippable} reads of the object. */
export interface JobsEvidence {
  meta: { annotations?: Readonly<Record<string, string>>; deletionTimestamp?: string };
  status: Pick<TargetStatus, 'activeJob' | 'attempts' | 'stateSuffix'>;
  /** Paths of status fields that do not parse (nothing is planned from such a status). */
  statusUnreadable?: readonly string[];
}

/**
 * True when the object shows nothing of it runs, so an `idle` plan made without its Jobs is the one a
 * listed step makes: no block-move annotation (a start writes it under the version read before its Job
 * is created, and it goes only in a step that read every Job finished and bookkept, after the marks) and
 * no `status.activeJob` (written after the create; a person removing the annotation leaves it); not
 * deleting (a finalize reads the Jobs); a status that parses; the retry state stored (`status.attempts`,
 * every bookkept run folded in, so the decision's retries do not come from the records) and the state
 * suffix recorded (not learnt from a Job's annotation). What an unlisted Job could change is covered
 * elsewhere: a Job started concurrently by a step whose lock was lost (Redis failed) is found by the next
 * step that lists, which every non-idle decision is; its end's event and the sweep (DESIGN.md section 8,
 * which lists every Job) step the object with its Jobs listed (`StepOptions.listJobs`), so no result is
 * lost; and no Job is ever started from an unlisted snapshot. Pruning a retained Job past a lowered
 * history limit waits for the object's next listed step.
 */
export function jobsListSkippable(object: JobsEvidence): boolean {
  const { status } = object;
  return (
    !carriesBlockMove(object.meta.annotations) &&
    status.activeJob === undefined &&
    object.meta.deletionTimestamp === undefined &&
    object.statusUnreadable === undefined &&
    status.attempts !== undefined &&
    status.stateSuffix !== undefined
  );
}
