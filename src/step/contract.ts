import type { TargetKind } from '../schemas/kinds/api-group.ts';

/**
 * The contract between the reconcile step (src/step) and its callers (HTTP routes, the tick runner, the
 * sweep). A step is one idempotent pass over one object (DESIGN.md section 5).
 */

/** Our object kinds (DESIGN.md section 2), defined once by the schema, under the names callers use. */
export { TARGET_KINDS as OBJECT_KINDS } from '../schemas/kinds/api-group.ts';
export type ObjectKind = TargetKind;

/** Identifies one object; the key of the requeue schedule is `kind/namespace/name` (DESIGN.md section 8). */
export interface ObjectRef {
  kind: ObjectKind;
  namespace: string;
  name: string;
}

/** What a step did, in one word. */
export type StepAction =
  | 'created' // created (or adopted) a Job
  | 'bookkept' // recorded one or more finished Jobs
  | 'watching' // a Job is running
  | 'waiting' // a gate holds the object (section 6)
  | 'finalized' // removed the finalizer
  | 'none' // nothing to do until the next schedule
  | 'deferred' // another call holds the step lock
  | 'gone' // the object does not exist
  | 'unavailable'; // Redis or the API server could not be reached: nothing was changed

/** A step's outcome; the shell turns it into the HTTP status, the requeue and the log line in one place. */
export interface StepOutcome {
  ref: ObjectRef;
  action: StepAction;
  /** CamelCase reason (DESIGN.md sections 3, 6, 7), e.g. `NoState`, `WaitingForJobSlot`. */
  reason: string;
  /** When to look again, in seconds; undefined when no requeue is needed (object gone). */
  requeueAfterSeconds?: number;
  /** A human sentence for logs and `/reconcile` answers; never secret data. */
  message?: string;
  /** Job name created, adopted or watched, when any. */
  job?: string;
  /**
   * The object's `uid` and `resourceVersion` as the step left them (after its own writes): the step has
   * seen this version, so an event about it needs no second step (the `/events` dedupe remembers it).
   * Absent when the step read no object or could not finish (`unavailable`).
   */
  observed?: { uid: string; resourceVersion: string };
}

/** Options of one step call. */
export interface StepOptions {
  /** Explain the decision without mutating anything (`POST /reconcile?dryRun=true`). */
  dryRun?: boolean;
}

/** Runs one reconcile step for one object. Throws only for bugs; outages come back as `unavailable`. */
export type ReconcileStep = (ref: ObjectRef, options?: StepOptions) => Promise<StepOutcome>;
