import type { BaseLogger } from 'pino';
import { type ObjectRef, refKey } from '../core/object-ref.ts';
import { isOrphanToDelete } from '../core/orphaned-pods.ts';
import { podsToRelease } from '../core/pod-release.ts';
import type { PodView } from '../core/views.ts';
import type { EventDedupe, ObjectVersion, RequeueSchedule } from '../settle/ports.ts';
import type { Settle } from '../settle/settle.ts';
import { runBounded } from './pool.ts';
import type { SingleHolderLease } from './single-holder-lease.ts';

/**
 * The sweep (DESIGN.md section 8): every sync period, one instance at a time, list our objects and Jobs,
 * reconcile every object with a finished un-bookkept Job, and give every object a requeue. This is how the
 * system heals after lost events or a flushed Redis. It deletes no per-run Secret: bookkeeping deletes a
 * Job's Secret before it marks the Job bookkept (src/step/perform.ts, DESIGN.md section 7's order), so a
 * bookkept Job has none left, and an un-bookkept one is bookkept here; a Secret whose Job is gone is the
 * garbage collector's (its owner reference). Looking for leftovers cost a DELETE per retained Job per period.
 */

/**
 * Redis round trips of the requeue pass in flight at once (two per object: the version check and the
 * requeue). One after another, 1,000 objects cost 2,000 sequential round trips every sync period.
 */
const REQUEUE_CONCURRENCY = 32;

/** One of our objects as listed: its reference and the version it is at. */
export interface SweptObject {
  ref: ObjectRef;
  /** Undefined when the list did not carry it (the object is then treated as unchanged). */
  version?: ObjectVersion;
}

/** One of our Jobs as the sweep sees it (label `captf.io/managed=true`). */
export interface SweptJob {
  namespace: string;
  name: string;
  /** From the `captf.io/owner-kind`/`owner-name` labels; undefined when they are missing or not ours. */
  owner: ObjectRef | undefined;
  /** The Job has a Complete or Failed condition. */
  finished: boolean;
  /** The Job carries `captf.io/bookkept` (DESIGN.md section 5 step 3). */
  bookkept: boolean;
  /** The Job's UID: its pods name it in their owner reference. Without it, its pods count as a gone Job's. */
  uid?: string;
  /** The Job has a deletionTimestamp. */
  deleting?: boolean;
}

/** One of our Job pods as listed. */
export interface SweptPod {
  namespace: string;
  name: string;
  /**
   * What the rules read of it: its name, UID, version, labels, finalizers, owner references and
   * deletionTimestamp, and its phase.
   */
  view: PodView;
}

/**
 * Leftovers of our Jobs' pods: pods whose Job is gone (deleted by hand, C14; or with its object) are held by
 * our finalizer for nothing that will ever read them (src/core/pod-release.ts), and pods a Job deleted with
 * orphaning left stay for ever once ended (src/core/orphaned-pods.ts). Listed before the Jobs, so a pod of
 * a Job created meanwhile is never mistaken for one whose Job is gone.
 */
export interface SweepPods {
  /** Our Job pods (`captf.io/managed=true`). */
  listPods(): Promise<SweptPod[]>;
  /** Removes our finalizer from one pod; a pod gone is not an error. */
  releasePod(pod: SweptPod): Promise<void>;
  /**
   * Deletes one orphaned pod, that incarnation at the version listed only; true when it deleted it, false
   * when it was gone already or changed since the list (judged again at the next sweep).
   */
  deletePod(pod: SweptPod): Promise<boolean>;
}

/** The live reads the sweep makes; each throws UnavailableError on an outage. */
export interface SweepListers {
  listObjects(): Promise<SweptObject[]>;
  listJobs(): Promise<SweptJob[]>;
}

export interface SweepDeps {
  /**
   * The sweep lease; taken for one sync period and not released after a good sweep, so it doubles as the
   * "sweep is due" timer across instances.
   */
  lease: SingleHolderLease;
  /**
   * This instance's id. Each sweep call holds the lease as `<holder>@<now ms>`, so a lease taken by an
   * earlier call of this same instance also counts as "not due" (a re-entrant take would sweep every tick).
   */
  holder: string;
  listers: SweepListers;
  /** Releases our finalizer from pods whose Job is gone; absent: the sweep leaves pods alone. */
  pods?: SweepPods;
  /** Runs and settles one step (its requeue included). */
  settle: Settle;
  schedule: RequeueSchedule;
  /**
   * The versions steps have left (src/settle/settle.ts remembers each): an object listed at a version no step
   * has seen changed while its event was lost, and is looked at now rather than at its requeue.
   */
  dedupe: Pick<EventDedupe, 'seen'>;
  clock: () => number;
  logger: Pick<BaseLogger, 'debug' | 'info' | 'warn' | 'error'>;
  periodMs: number;
  concurrency: number;
}

/** What one sweep call did. */
export type SweepReport =
  | { state: 'skipped'; reason: 'NotDueOrHeldElsewhere' }
  | { state: 'failed'; reason: 'ListOrScheduleFailed'; message: string }
  | {
      state: 'ran';
      reason: 'SyncPeriodElapsed';
      objects: number;
      jobs: number;
      reconciled: number;
      /** Pods released from our finalizer (only when `pods` is given). */
      podsReleased?: number;
      /** Orphaned pods deleted, not counting those gone already (only when `pods` is given). */
      podsDeleted?: number;
      requeued: number;
      /** Objects at a version no step has seen (a lost event, or a marker past its TTL): looked at now. */
      changed: number;
      stepFailures: number;
    };

/** Objects owning a finished Job that bookkeeping has not recorded yet, each once, among live objects. */
export function objectsNeedingBookkeeping(
  objects: readonly ObjectRef[],
  jobs: readonly SweptJob[],
): ObjectRef[] {
  const live = new Map(objects.map((ref) => [refKey(ref), ref]));
  const wanted = new Map<string, ObjectRef>();
  for (const job of jobs) {
    if (!job.finished || job.bookkept || job.owner === undefined) continue;
    const ref = live.get(refKey(job.owner));
    if (ref !== undefined) wanted.set(refKey(ref), ref);
  }
  return [...wanted.values()];
}

/**
 * Held pods no bookkeeping will read again: their Job is gone, or bookkept and the pod deleted, or being
 * deleted unfinished (src/core/pod-release.ts). A Job listed without a UID protects nothing.
 */
export function podsToReleaseInSweep(pods: readonly SweptPod[], jobs: readonly SweptJob[]): SweptPod[] {
  const views = jobs.flatMap((job) =>
    job.uid === undefined
      ? []
      : [{ uid: job.uid, bookkept: job.bookkept, finished: job.finished, deleting: job.deleting ?? false }],
  );
  return podsToRelease({
    pods: pods.map((pod) => ({ metadata: pod.view.metadata, held: pod })),
    jobs: views,
  }).map(({ pod }) => pod.held);
}

/** Runs the sweep if this instance gets the lease; never throws (failures come back in the report). */
export async function runSweepIfDue(deps: SweepDeps): Promise<SweepReport> {
  const holder = `${deps.holder}@${deps.clock()}`;
  let acquired: boolean;
  try {
    acquired = await deps.lease.tryAcquire(holder, deps.periodMs);
  } catch (error) {
    return {
      state: 'failed',
      reason: 'ListOrScheduleFailed',
      message: `take sweep lease: ${messageOf(error)}`,
    };
  }
  if (!acquired) return { state: 'skipped', reason: 'NotDueOrHeldElsewhere' };
  try {
    return await sweep(deps);
  } catch (error) {
    // Give the lease back so the next tick tries again instead of waiting a whole period.
    await deps.lease.release(holder).catch(() => undefined);
    deps.logger.warn({ err: error }, 'sweep: failed');
    return { state: 'failed', reason: 'ListOrScheduleFailed', message: `sweep: ${messageOf(error)}` };
  }
}

async function sweep(deps: SweepDeps): Promise<SweepReport> {
  // Pods before Jobs: a Job is created before its pods, so every pod listed first has its Job in the later Job
  // list unless that Job is really gone (nothing fresh is mistaken for an orphan).
  const pods = (await deps.pods?.listPods()) ?? [];
  const [objects, jobs] = await Promise.all([deps.listers.listObjects(), deps.listers.listJobs()]);
  // Requeues first: whatever fails later in this sweep, every object has its next look (DESIGN.md section 8:
  // this is how a flushed Redis heals). An object changed since its last step (its event was lost) is due now;
  // any other gets a requeue only when it has none, so a resting fleet is not stepped every period.
  const nowMs = deps.clock();
  const requeues = await runBounded(
    objects,
    REQUEUE_CONCURRENCY,
    () => true,
    async (object) => {
      if (object.version !== undefined && !(await deps.dedupe.seen(object.version))) {
        await deps.schedule.add(object.ref, nowMs);
        return true;
      }
      await deps.schedule.ensure(object.ref, nowMs + deps.periodMs);
      return false;
    },
  );
  const requeueFailure = requeues.find((r) => r.state === 'failed');
  if (requeueFailure?.state === 'failed') throw requeueFailure.error;
  const changed = requeues.filter((r) => r.state === 'done' && r.value).length;
  const refs = objects.map((object) => object.ref);
  const toReconcile = objectsNeedingBookkeeping(refs, jobs);
  const results = await runBounded(
    toReconcile,
    deps.concurrency,
    () => true,
    async (ref) => {
      // Its Jobs listed: the sweep found a finished one it must bookkeep (src/core/jobs-read.ts).
      await deps.settle(ref, { log: deps.logger, listJobs: true });
    },
  );
  const stepFailures = results.filter((r) => r.state === 'failed').length;
  for (const r of results) {
    if (r.state === 'failed') deps.logger.warn({ err: r.error, ...r.item }, 'sweep step: failed');
  }
  // Deletes before releases: a delete goes under the version listed, which a release would move on (an
  // orphan still held by our finalizer then goes with its release). A pod whose Job is still listed waits
  // for that Job's bookkeeping (src/core/orphaned-pods.ts).
  const listedJobUids = new Set(jobs.flatMap((job) => (job.uid === undefined ? [] : [job.uid])));
  const orphans = pods.filter((pod) => isOrphanToDelete(pod.view, listedJobUids));
  const podsDeleted = await eachCounted(
    deps,
    orphans,
    async (pod) => (await deps.pods?.deletePod(pod)) === true,
    'delete orphaned pod',
  );
  const released = deps.pods ? podsToReleaseInSweep(pods, jobs) : [];
  const podsReleased = await eachCounted(
    deps,
    released,
    async (pod) => {
      await deps.pods?.releasePod(pod);
      return true;
    },
    'release pod finalizer',
  );
  return {
    state: 'ran',
    reason: 'SyncPeriodElapsed',
    objects: objects.length,
    jobs: jobs.length,
    reconciled: toReconcile.length - stepFailures,
    ...(deps.pods ? { podsReleased, podsDeleted } : {}),
    requeued: objects.length,
    changed,
    stepFailures,
  };
}

/**
 * Runs `action` on each item one after another; a failure is logged and skipped, so one refused delete
 * cannot stop the rest of the cleanup. Returns how many did something (`action` answered true).
 */
async function eachCounted<T extends object>(
  deps: SweepDeps,
  items: readonly T[],
  action: (item: T) => Promise<boolean>,
  what: string,
): Promise<number> {
  let done = 0;
  for (const item of items) {
    try {
      if (await action(item)) done += 1;
    } catch (error) {
      const fields: Record<string, unknown> = { err: error, ...item };
      deps.logger.warn(fields, `sweep: ${what}: failed`);
    }
  }
  return done;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
