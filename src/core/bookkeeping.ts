import type { TargetStatus } from '../schemas/kinds/target.ts';
import { withRecorded } from './attempts.ts';
import { type Classification, EVIDENCE_TABLE, type Evidence } from './classify.ts';
import { drivenByClusterApi } from './cluster-api.ts';
import { type RunEvent, runEvent } from './event-spec.ts';
import type { JobRecord } from './job-record.ts';
import { classifyWithLock } from './lock-evidence.ts';
import type { LockVerdict } from './locks.ts';
import { runSecretName } from './names.ts';
import { podsOfJob } from './pods.ts';
import { type PlanChange, recordRun } from './record-run.ts';
import type { Redactor } from './redaction.ts';
import { type PodLogFallback, podLogFallback } from './run-log-fallback.ts';
import type { Snapshot } from './snapshot.ts';
import { type JobView, type PodView, timestampMs } from './views.ts';
import { shownPullTrouble } from './watch.ts';

/**
 * Bookkeeping decided (DESIGN.md sections 5 step 3 and 7): every finished Job not yet bookkept, oldest
 * first, classified (src/core/classify.ts) and recorded (src/core/record-run.ts) onto the status, without
 * I/O. The shell writes the result in the crash-safe order of src/step/perform.ts.
 */

/** One finished Job and its verdict. */
export interface BookkeptRun {
  job: JobView;
  record: JobRecord;
  classification: Classification & { lock?: LockVerdict };
  /** From the Job's start (its creation when it never started) to its classified finish, in seconds. */
  durationSeconds: number;
  /** The pod log to keep as the run's log: its runner was killed before it wrote one (section 7). */
  podLog?: PodLogFallback;
}

/** Bookkeeping computed but not yet written. */
export interface Bookkeeping {
  runs: BookkeptRun[];
  status: TargetStatus;
  /** Spec contract fields to merge-patch before the status. */
  spec: Record<string, unknown>;
  plans: PlanChange[];
  events: RunEvent[];
  /** The object's records as they will be once the marks are written. */
  records: JobRecord[];
}

/** Finished, un-bookkept Jobs oldest first; `also` adds Jobs the watch decided to end (deadline). */
export function jobsToBookkeep(
  snap: Pick<Snapshot, 'records' | 'jobs'>,
  also: ReadonlySet<string> = new Set(),
): { job: JobView; record: JobRecord }[] {
  return snap.records
    .filter((record) => !record.bookkept && (record.finished || also.has(record.name)))
    .sort(
      (a, b) =>
        (a.finishedAtMs ?? a.createdAtMs) - (b.finishedAtMs ?? b.createdAtMs) ||
        a.createdAtMs - b.createdAtMs,
    )
    .flatMap((record) => {
      const job = snap.jobs.find((j) => j.metadata.name === record.name);
      return job ? [{ job, record }] : [];
    });
}

/** What bookkeeping reads besides the Jobs it records. */
export interface BookkeepingInput {
  snap: Snapshot;
  now: Date;
  /** The object's pods (label `captf.io/owner-uid`). */
  pods: readonly PodView[];
  redactor: Redactor;
  /** The status the step has decided so far (the snapshot's at first). */
  status: TargetStatus;
  /** Jobs whose deadline the step itself enforces (section 5 step 4). */
  deadlineEnforced?: ReadonlySet<string>;
  /**
   * The API server refused the contract fields for good (400/422) when this bookkeeping was first written:
   * the runs that carried them are recorded as `OutputsInvalid` with the server's words (section 7).
   */
  refusedOutputs?: string;
}

/** A successful run whose contract outputs the API server refused: a failed run, counted, naming them. */
function asOutputsRefused(run: Classification, message: string): Classification {
  if (!run.success || run.outputs === undefined || Object.keys(run.outputs).length === 0) return run;
  const evidence: Evidence = 'outputs-invalid';
  const row = EVIDENCE_TABLE[evidence];
  const { outputs: _outputs, ...rest } = run;
  return {
    ...rest,
    evidence,
    result: row.result,
    reason: row.reason[run.op],
    counted: row.counted,
    interruption: row.interruption,
    success: row.success,
    conditionStatus: row.conditionStatus,
    error: {
      kind: 'step',
      summary: `the API server refused the contract output(s) ${Object.keys(run.outputs).join(', ')}: ${message}`,
    },
  };
}

function runSeconds(job: JobView, record: JobRecord, finishedAt: Date): number {
  const startedMs =
    timestampMs(job.status?.startTime) ?? timestampMs(job.metadata.creationTimestamp) ?? record.createdAtMs;
  return Math.max(0, (finishedAt.getTime() - startedMs) / 1000);
}

/** Classifies and records `finished` onto `input.status` (no writes). */
export function planBookkeeping(
  input: BookkeepingInput,
  finished: readonly { job: JobView; record: JobRecord }[],
): Bookkeeping {
  const { snap, now, pods, redactor } = input;
  let status: TargetStatus = structuredClone(input.status);
  let spec: Record<string, unknown> = {};
  const plans: PlanChange[] = [];
  const events: RunEvent[] = [];
  const runs: BookkeptRun[] = [];
  const records = snap.records.map((r) => ({ ...r }));
  for (const { job, record } of finished) {
    const pullShown = shownPullTrouble(status, record.name, record.op);
    const raw = classifyWithLock(
      snap.jobs,
      {
        op: record.op,
        kind: snap.ref.kind,
        job,
        pods: podsOfJob(job, pods),
        observedPullTrouble: pullShown !== undefined,
        ...(pullShown === undefined ? {} : { observedPullMessage: pullShown }),
        deadlineEnforced: input.deadlineEnforced?.has(record.name) ?? false,
        now,
      },
      pods,
    );
    const refused = input.refusedOutputs === undefined ? raw : asOutputsRefused(raw, input.refusedOutputs);
    // C15: the summary feeds conditions, lastRun and Events; secret values are cut out once, here.
    const classification = refused.error
      ? { ...refused, error: { ...refused.error, summary: redactor.redact(refused.error.summary) } }
      : refused;
    const recorded = recordRun(status, job, record, classification, {
      kind: snap.ref.kind,
      now,
      deleting: snap.meta.deletionTimestamp !== undefined,
      spec: snap.spec ?? {},
      capiDriven: drivenByClusterApi(snap),
      ...(snap.pendingPlan ? { pendingPlan: snap.pendingPlan } : {}),
      redact: redactor,
      records: snap.records,
    });
    status = recorded.status;
    spec = input.refusedOutputs === undefined ? { ...spec, ...recorded.spec } : {};
    plans.push(...recorded.plans);
    events.push(...recorded.events);
    const podLog = podLogFallback({ job, pods, classification });
    runs.push({
      job,
      record,
      classification,
      durationSeconds: runSeconds(job, record, classification.finishedAt),
      ...(podLog ? { podLog } : {}),
    });
    const updated = records.find((r) => r.name === record.name);
    if (updated) {
      updated.bookkept = true;
      updated.finished = true;
      updated.outcome = classification.evidence;
      updated.finishedAtMs = classification.finishedAt.getTime();
    }
  }
  return { runs, status, spec, plans, events, records };
}

/**
 * A Job named by `status.activeJob` that the API server no longer lists was deleted before it finished
 * (pruned, deleted by a person, or with its object): its run cannot be read any more, but it happened. It
 * counts as an interruption (retried at once, DESIGN.md section 4, with its own cap), or as a deadline kill
 * once its deadline had passed, which always counts; one `JobInterrupted` Event says so, and `activeJob`
 * goes. The attempt it used stays used (`status.attempts`). `runSecret`: its per-run Secret, to delete by
 * name before the status forgets the Job (a Job deleted with orphaning left it without the owner reference
 * the garbage collector deletes it by, src/core/orphaned-pods.ts).
 */
export function recordLostActiveJob(
  snap: Snapshot,
  status: TargetStatus,
  now: Date,
  activeDeadlineSeconds: number,
): { status: TargetStatus; events: RunEvent[]; runSecret: string } | undefined {
  const active = status.activeJob;
  if (active === undefined || snap.records.some((record) => record.name === active.name)) return undefined;
  const startedMs = timestampMs(active.startedAt) ?? now.getTime();
  const evidence: Evidence =
    now.getTime() >= startedMs + activeDeadlineSeconds * 1000 ? 'deadline' : 'interrupted';
  const next: TargetStatus = {
    ...status,
    attempts: withRecorded(status.attempts, snap.records, {
      op: active.op,
      attempt: active.attempt,
      evidence,
      finishedAtMs: now.getTime(),
    }),
  };
  delete next.activeJob;
  return {
    status: next,
    runSecret: runSecretName(active.name),
    events: [
      runEvent('JobInterrupted', {
        action: 'Reconcile',
        note:
          evidence === 'deadline'
            ? `Job ${active.name} was deleted after its deadline; the run counts as a deadline kill`
            : `Job ${active.name} was deleted before it finished; the run is retried`,
        transitionKey: active.name,
      }),
    ],
  };
}
