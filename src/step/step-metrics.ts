import type { Classification } from '../core/classify.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import type { Snapshot } from '../core/snapshot.ts';
import type { FleetMetricsRecorder, ObjectFigures, ObjectSize } from '../metrics/fleet.ts';
import type { Metrics } from '../metrics/registry.ts';
import { resolveJobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';

/**
 * What the step reports toward the metrics of DESIGN.md section 14, once per transition: a Job created (an
 * adoption repeats the idempotent start and never counts twice), a Job bookkept (after its
 * `captf.io/bookkept` mark, so bookkeeping repeated after a crash before the mark counts it once), a stale
 * lock handed to a new Job, an object gone; and after every step, what it left of the object (its figures)
 * and, when measured, the sizes of its Secrets. Reporting never fails a step: a metrics store outage costs
 * figures, not reconciles. Lease and slot waits are counted from the step's outcome around every step,
 * whichever route ran it (src/metrics/instrument.ts), so they are not reported here: they would count twice.
 */

/** A Job whose bookkeeping was written. */
export interface BookkeptJob {
  object: ObjectRef;
  /** The Job's name (in the object's namespace). */
  job: string;
  classification: Classification;
  /** From the Job's start to its finish, in seconds. */
  durationSeconds: number;
}

/** The step's metrics port. */
export interface StepMetrics {
  /**
   * A Job of the object was created, or adopted after a lost create answer: idempotent per Job name, so an
   * adopted Job is active once and still counts toward `captf_jobs_total` when it finishes.
   */
  jobStarted(job: { namespace: string; name: string }): Promise<void>;
  /** A created Job carries `force-unlock` for a stale state lock (DESIGN.md section 12). */
  forceUnlocked(): void;
  /** A finished Job was bookkept. */
  jobBookkept(run: BookkeptJob): Promise<void>;
  /** The object left our care (finalizer removed, deleted, or managed elsewhere): its per-object series go. */
  objectGone(object: ObjectRef): Promise<void>;
  /** What a step left of the object (src/step/step-metrics.ts `objectFiguresOf`). */
  objectSeen(figures: ObjectFigures): Promise<void>;
  /** A Secret size of the object was measured (a per-run Secret created, a state Secret read). */
  sizeMeasured(size: ObjectSize): Promise<void>;
}

/** Unix seconds of an RFC 3339 time, or undefined when it does not parse. */
function seconds(time: string | undefined): number | undefined {
  const ms = time === undefined ? Number.NaN : Date.parse(time);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/**
 * The figures of an object as a step left it: the snapshot it read, with `status` as the step wrote it
 * (pure). A spec that does not parse schedules nothing.
 */
export function objectFiguresOf(snap: Snapshot, status: TargetStatus): ObjectFigures {
  const deletingSinceSeconds = seconds(snap.meta.deletionTimestamp);
  const active = status.activeJob;
  const startedAtSeconds = seconds(active?.startedAt);
  // The Job's own deadline; a Job this very step created is not in the snapshot, and has the spec's.
  const deadlineSeconds =
    snap.jobs.find((job) => job.metadata.name === active?.name)?.spec?.activeDeadlineSeconds ??
    (snap.spec
      ? resolveJobsPolicy(snap.spec.jobs, snap.owningCluster?.defaultsJobs).activeDeadlineSeconds
      : undefined);
  const pendingPlan = pendingPlanFigure(snap, status);
  return {
    ...snap.ref,
    paused: snap.paused,
    ...(deletingSinceSeconds !== undefined ? { deletingSinceSeconds } : {}),
    driftDetected: status.conditions?.some((c) => c.type === 'DriftDetected' && c.status === 'True') ?? false,
    schedules: {
      drift: snap.spec?.driftCheck.enabled ?? false,
      refresh: snap.spec?.refresh?.interval !== undefined,
    },
    ...(status.waitReason !== undefined ? { waitReason: status.waitReason } : {}),
    ...(active !== undefined && startedAtSeconds !== undefined
      ? {
          activeJob: {
            op: active.op,
            startedAtSeconds,
            ...(deadlineSeconds !== undefined ? { deadlineSeconds } : {}),
          },
        }
      : {}),
    ...(pendingPlan !== undefined ? { pendingPlan } : {}),
  };
}

/**
 * The plan the object waits on for approval and since when: the creation of the plan the step read, or,
 * for a plan this very step created (not in the snapshot), the end of the run that made it.
 */
function pendingPlanFigure(snap: Snapshot, status: TargetStatus): ObjectFigures['pendingPlan'] {
  const plan = status.pendingPlanRef?.name;
  if (status.waitReason !== 'AwaitingApproval' || plan === undefined) return undefined;
  const read =
    snap.pendingPlan?.metadata.name === plan ? snap.pendingPlan.metadata.creationTimestamp : undefined;
  const sinceSeconds = seconds(read ?? status.lastRun?.finishedAt);
  return sinceSeconds === undefined ? undefined : { plan, sinceSeconds };
}

/** Reports nothing: steps built without metrics (tests, dry tools). */
export const NO_STEP_METRICS: StepMetrics = {
  jobStarted: async () => undefined,
  forceUnlocked: () => undefined,
  jobBookkept: async () => undefined,
  objectGone: async () => undefined,
  objectSeen: async () => undefined,
  sizeMeasured: async () => undefined,
};

/**
 * The production port: fleet figures in the shared store (`captf_jobs_total`, `captf_jobs_active`,
 * `captf_last_success_timestamp_seconds`), per-instance ones on the app's registry
 * (`captf_job_duration_seconds`, `captf_job_errors_total`, `captf_lock_force_unlocks_total`), and the
 * per-object figures and sizes in the shared store too. `onError`
 * hears a store write that failed; the step goes on.
 */
export function stepMetricsOf(
  metrics: Pick<Metrics, 'jobDuration' | 'jobErrors' | 'forceUnlocks'>,
  fleet: FleetMetricsRecorder,
  onError: (error: unknown) => void,
): StepMetrics {
  const quietly = async (write: () => Promise<void>): Promise<void> => {
    try {
      await write();
    } catch (error) {
      onError(error);
    }
  };
  return {
    async jobStarted(job) {
      await quietly(() => fleet.jobStarted(job));
    },
    forceUnlocked() {
      metrics.forceUnlocks.inc();
    },
    async jobBookkept({ object, job, classification, durationSeconds }) {
      const { op, result } = classification;
      metrics.jobDuration.observe({ kind: object.kind, op, result }, durationSeconds);
      // Failed Jobs only: an interrupted or blocked run carries an error kind for the runbook, not an error.
      if (classification.error && classification.result === 'failed')
        metrics.jobErrors.inc({
          error_kind: classification.error.kind,
          step: classification.error.step ?? '',
        });
      await quietly(() =>
        fleet.jobFinished({ namespace: object.namespace, name: job, kind: object.kind, op, result }),
      );
      if (classification.success)
        await quietly(() =>
          fleet.succeeded({
            ...object,
            op,
            timestampSeconds: Math.floor(classification.finishedAt.getTime() / 1000),
          }),
        );
    },
    async objectGone(object) {
      await quietly(() => fleet.forget(object));
    },
    async objectSeen(figures) {
      await quietly(() => fleet.objectSeen(figures));
    },
    async sizeMeasured(size) {
      await quietly(() => fleet.sizeMeasured(size));
    },
  };
}
