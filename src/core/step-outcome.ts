import { WAIT_REASONS, type WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { RunReason } from './classify.ts';
import type { StartReason } from './decide.ts';
import type { ObjectRef } from './object-ref.ts';
import { WAIT_TABLE } from './wait-table.ts';
import type { Wake, WakeSource } from './wake.ts';

/**
 * What one reconcile step did (DESIGN.md section 5), as a value: a closed set of reasons, each with the
 * action it reports and the requeue it asks for, in one table. The step builds every outcome through
 * `outcomeOf`; a reason whose delay comes from the situation (a backoff's end, a schedule) must be given
 * one, every other takes the table's, so no caller writes a literal requeue.
 */

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

/** Reasons only the step itself gives. */
export type StepOnlyReason =
  | 'UpToDate'
  | 'DeletingWithoutState'
  | 'DeletingForMove'
  | 'ExternallyManaged'
  | 'FinalizerAdded'
  | 'DeletingWithoutFinalizer'
  | 'ObjectGone'
  | 'StepLockHeld'
  | 'StepLockLost'
  | 'Unavailable'
  | 'Conflict'
  | 'StuckJobDeleted'
  | 'UnstartedJobDeleted';

/** Every reason a step outcome can carry (DESIGN.md sections 3, 6 and 7). */
export type StepReason = WaitReason | StartReason | RunReason | StepOnlyReason;

/** How long until the object is looked at again: fixed seconds, decided by the situation, or never. */
type Requeue = number | 'computed' | 'none';

/**
 * What the watch event of the version a step leaves means (DESIGN.md sections 2 and 5): `seen`, the step's
 * own last word, so that event needs no step of its own; `next-step`, the step stopped at a boundary (the
 * finalizer write) or left the version in doubt (a conflict, an outage, an object released for deletion),
 * so that event is what starts the next step at once.
 */
export type Echo = 'seen' | 'next-step';

interface ReasonRow {
  action: StepAction;
  requeue: Requeue;
  echo: Echo;
}

/** The watch reasons: a Job runs (section 5 step 4); their delay runs to the Job's own deadline at most. */
const WATCH_REASONS: ReadonlySet<WaitReason> = new Set([
  'JobActive',
  'ImagePullBackOff',
  'CreateContainerConfigError',
]);
/** Waits whose end the situation decides: a backoff's end, a contended lock's end. */
const TIMED_WAITS: ReadonlySet<WaitReason> = new Set(['Backoff', 'LockContended']);

function waitRow(reason: WaitReason): ReasonRow {
  if (WATCH_REASONS.has(reason)) return { action: 'watching', requeue: 'computed', echo: 'seen' };
  // A jittered wait's requeue is the object's own (src/core/wait-table.ts `waitFor`).
  if (TIMED_WAITS.has(reason) || WAIT_TABLE[reason].jitter)
    return { action: 'waiting', requeue: 'computed', echo: 'seen' };
  return { action: 'waiting', requeue: WAIT_TABLE[reason].requeueSeconds, echo: 'seen' };
}

const CREATED: ReasonRow = { action: 'created', requeue: WAIT_TABLE.JobActive.requeueSeconds, echo: 'seen' };
const BOOKKEPT: ReasonRow = { action: 'bookkept', requeue: 'computed', echo: 'seen' };

const START_ROWS: Readonly<Record<StartReason, ReasonRow>> = {
  Deleting: CREATED,
  NoState: CREATED,
  InputsChanged: CREATED,
  LastApplyFailed: CREATED,
  PlanApproved: CREATED,
  DriftRemediation: CREATED,
  RefreshDue: CREATED,
  DriftDue: CREATED,
};

const RUN_ROWS: Readonly<Record<Exclude<RunReason, WaitReason>, ReasonRow>> = {
  ApplySucceeded: BOOKKEPT,
  DestroySucceeded: BOOKKEPT,
  DriftChecked: BOOKKEPT,
  Refreshed: BOOKKEPT,
  ApplyFailed: BOOKKEPT,
  DestroyFailed: BOOKKEPT,
  DriftJobFailed: BOOKKEPT,
  ImageInvalid: BOOKKEPT,
  StateDecryptionFailed: BOOKKEPT,
  ImagePullFailed: BOOKKEPT,
  JobDeadlineExceeded: BOOKKEPT,
  DriftJobDeadlineExceeded: BOOKKEPT,
  JobInterrupted: BOOKKEPT,
  DestructivePlanBlocked: BOOKKEPT,
  PlanAwaitingApproval: BOOKKEPT,
  PlanChanged: BOOKKEPT,
  OutputsInvalid: BOOKKEPT,
  ProviderIDChange: BOOKKEPT,
  ControlPlaneEndpointChange: BOOKKEPT,
};

const STEP_ROWS: Readonly<Record<StepOnlyReason, ReasonRow>> = {
  UpToDate: { action: 'none', requeue: 'computed', echo: 'seen' },
  DeletingWithoutState: { action: 'finalized', requeue: 'none', echo: 'next-step' },
  DeletingForMove: { action: 'finalized', requeue: 'none', echo: 'next-step' },
  // Nothing of ours to do; looked at hourly in case the annotation goes.
  ExternallyManaged: { action: 'none', requeue: 3600, echo: 'seen' },
  // The next step must read the finalizer write back before it acts.
  FinalizerAdded: { action: 'none', requeue: 1, echo: 'next-step' },
  DeletingWithoutFinalizer: { action: 'none', requeue: 'none', echo: 'seen' },
  ObjectGone: { action: 'gone', requeue: 'none', echo: 'seen' },
  // DESIGN.md section 5 step 1: another call holds the step lock; look again in 2 s.
  StepLockHeld: { action: 'deferred', requeue: 2, echo: 'seen' },
  StepLockLost: { action: 'deferred', requeue: 2, echo: 'seen' },
  // Retry-After of the outage (the API server's when it named one).
  Unavailable: { action: 'unavailable', requeue: 'computed', echo: 'next-step' },
  // A concurrent writer moved the object on: read again at once.
  Conflict: { action: 'waiting', requeue: 1, echo: 'next-step' },
  StuckJobDeleted: { action: 'waiting', requeue: 1, echo: 'seen' },
  UnstartedJobDeleted: { action: 'waiting', requeue: 1, echo: 'seen' },
};

/** Every reason's action and requeue; a reason without its row does not compile. */
export const REASON_TABLE: Readonly<Record<StepReason, ReasonRow>> = {
  ...(Object.fromEntries(WAIT_REASONS.map((reason) => [reason, waitRow(reason)])) as Record<
    WaitReason,
    ReasonRow
  >),
  ...START_ROWS,
  ...RUN_ROWS,
  ...STEP_ROWS,
};

/** Seconds before an `unavailable` step is retried when the outage named no delay. */
export const UNAVAILABLE_RETRY_SECONDS = 5;

/** The object's identity and version as the step left it (after its own writes). */
export interface ObservedVersion {
  uid: string;
  resourceVersion: string;
}

/** A step's outcome; src/settle turns it into the HTTP status, the requeue and the log line in one place. */
export interface StepOutcome {
  ref: ObjectRef;
  action: StepAction;
  reason: StepReason;
  /** When to look again, in seconds; undefined when no requeue is needed (object gone). */
  requeueAfterSeconds?: number;
  /** A human sentence for logs and `/reconcile` answers; already redacted, never secret data. */
  message?: string;
  /** Job name created, adopted or watched, when any. */
  job?: string;
  /**
   * The object's version once the step was done with it: a watch event of exactly this version is this
   * step's own write (or what it decided on) and needs no step of its own (DESIGN.md section 2).
   */
  observed?: ObservedVersion;
  /**
   * What this wait is woken by (src/core/wake.ts: its cluster's infrastructure, a Secret, a lease group, a
   * Job slot set): the object registers under each, and is looked at when one of them wakes it.
   */
  waitsFor?: readonly WakeSource[];
  /** The step made this object ready: the objects waiting for it are looked at now (a hint). */
  wakesDependents?: boolean;
  /** The step released leases and slots (a finished Job bookkept): their waiters are looked at now. */
  wakes?: readonly Wake[];
}

/** Extras of an outcome; `requeueAfterSeconds` only for reasons whose delay the situation decides. */
export interface OutcomeExtras {
  message?: string;
  job?: string;
  /** Required for computed reasons, ignored for the others. */
  requeueAfterSeconds?: number;
  /** The step recorded finished Jobs: a wait or an idle step then reports `bookkept`. */
  bookkept?: boolean;
  observed?: ObservedVersion;
}

/** Whether the watch event of the version a step with this reason leaves starts the next step. */
export function echoStartsNextStep(reason: StepReason): boolean {
  return REASON_TABLE[reason].echo === 'next-step';
}

/**
 * Builds an outcome from the table. A computed reason without `requeueAfterSeconds` is a bug and throws.
 * Seconds are whole and never negative.
 */
export function outcomeOf(ref: ObjectRef, reason: StepReason, extras: OutcomeExtras = {}): StepOutcome {
  const row = REASON_TABLE[reason];
  let requeueAfterSeconds: number | undefined;
  if (row.requeue === 'computed') {
    if (extras.requeueAfterSeconds === undefined)
      throw new Error(`build step outcome: reason ${reason} needs a requeue`);
    requeueAfterSeconds = extras.requeueAfterSeconds;
  } else if (row.requeue !== 'none') {
    requeueAfterSeconds = row.requeue;
  }
  const action =
    extras.bookkept === true && (row.action === 'waiting' || row.action === 'none') ? 'bookkept' : row.action;
  return {
    ref,
    action,
    reason,
    ...(requeueAfterSeconds !== undefined
      ? { requeueAfterSeconds: Math.max(0, Math.ceil(requeueAfterSeconds)) }
      : {}),
    ...(extras.message !== undefined ? { message: extras.message } : {}),
    ...(extras.job !== undefined ? { job: extras.job } : {}),
    ...(extras.observed !== undefined ? { observed: extras.observed } : {}),
  };
}
