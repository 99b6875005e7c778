import type { V1Job } from '@kubernetes/client-node';
import { isKubeError } from '../adapters/kube/errors.ts';
import { OUR_API_VERSION } from '../adapters/kube/resources.ts';
import type { Classification } from '../core/classify.ts';
import { ownerLabels } from '../core/job-labels.ts';
import { bookkeptAnnotations, type JobRecord } from '../core/job-record.ts';
import { runSecretName } from '../core/names.ts';
import { buildPlanManifest } from '../core/plan-manifest.ts';
import { selectJobsToPrune } from '../core/prune.ts';
import type { StepContext } from './context.ts';
import { releaseRunGuards, runGuard } from './leases.ts';
import { releasePodFinalizers } from './pod-finalizers.ts';
import { podsOfJob } from './pods.ts';
import { type PlanChange, type RunEvent, recordRun } from './record-run.ts';
import type { TargetStatus } from './snapshot.ts';
import { classifyWithLock } from './stale-lock.ts';
import { asJobView, asPodView } from './views.ts';

/**
 * Bookkeeping (DESIGN.md sections 5 step 3 and 7): every finished Job not yet bookkept, oldest first, is
 * classified (src/core/classify.ts) and recorded. The order of the writes is the crash-safety argument:
 * 1. TerraformPlans and spec contract fields, then the status (one write, with everything);
 * 2. Events (deterministic names: a repeat after a crash finds them and adds none);
 * 3. the `captf.io/bookkept` mark, so a failed status write means the Job is read again;
 * 4. the per-run Secret, the leases and slots, then pruning.
 * Events come before the mark so that a crash between the two repeats them (deduplicated by name) rather
 * than losing them; everything after the mark is also done by later steps (stale-lease healing, the
 * sweep, owner references).
 */

/** One finished Job and its verdict. */
export interface FinishedRun {
  job: V1Job;
  record: JobRecord;
  classification: Classification;
}

/** Bookkeeping computed but not yet written. */
export interface Bookkeeping {
  runs: FinishedRun[];
  status: TargetStatus;
  spec: Record<string, unknown>;
  plans: PlanChange[];
  events: RunEvent[];
  /** The object's records as they will be once the marks are written. */
  records: JobRecord[];
}

/** Finished, un-bookkept Jobs oldest first; `also` adds Jobs the watch decided to end (deadline). */
export function jobsToBookkeep(
  context: StepContext,
  also: ReadonlySet<string> = new Set(),
): { job: V1Job; record: JobRecord }[] {
  const { snap } = context;
  return snap.records
    .filter((record) => !record.bookkept && (record.finished || also.has(record.name)))
    .sort(
      (a, b) =>
        (a.finishedAtMs ?? a.createdAtMs) - (b.finishedAtMs ?? b.createdAtMs) ||
        a.createdAtMs - b.createdAtMs,
    )
    .flatMap((record) => {
      const job = snap.jobs.find((j) => j.metadata?.name === record.name);
      return job ? [{ job, record }] : [];
    });
}

/**
 * Classifies and records the given Jobs onto the status the step read (no writes). `deadlineEnforced`
 * names the Jobs whose deadline the step itself enforces (section 5 step 4).
 */
export async function prepareBookkeeping(
  context: StepContext,
  finished: { job: V1Job; record: JobRecord }[],
  deadlineEnforced: ReadonlySet<string> = new Set(),
): Promise<Bookkeeping> {
  const { snap } = context;
  const pods = finished.length > 0 ? await snap.pods() : [];
  let status: TargetStatus = structuredClone(context.draft);
  let spec: Record<string, unknown> = {};
  const plans: PlanChange[] = [];
  const events: RunEvent[] = [];
  const runs: FinishedRun[] = [];
  const records = snap.records.map((r) => ({ ...r }));
  for (const { job, record } of finished) {
    const { classification: raw } = classifyWithLock(
      snap.jobs,
      {
        op: record.op,
        job: asJobView(job),
        pods: podsOfJob(job, pods).map(asPodView),
        observedPullTrouble:
          context.draft.waitReason === 'ImagePullBackOff' && context.draft.activeJob?.name === record.name,
        deadlineEnforced: deadlineEnforced.has(record.name),
        now: context.now,
      },
      pods,
    );
    // C15: summaries feed conditions, lastRun and Events; cut referenced Secret values out once, here.
    const classification = raw.error
      ? { ...raw, error: { ...raw.error, summary: context.redact(raw.error.summary) } }
      : raw;
    const recorded = recordRun(status, asJobView(job), record, classification, {
      kind: snap.ref.kind,
      now: context.now,
      deleting: snap.object.metadata.deletionTimestamp !== undefined,
      spec: snap.spec ?? {},
      ...(snap.pendingPlan ? { pendingPlan: snap.pendingPlan } : {}),
      redact: context.redact,
    });
    status = recorded.status;
    spec = { ...spec, ...recorded.spec };
    plans.push(...recorded.plans);
    events.push(...recorded.events);
    runs.push({ job, record, classification });
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
 * Step 1 of the write order, before the status: TerraformPlans (so `pendingPlanRef` never names a plan
 * that does not exist) and the spec contract fields (which move the resourceVersion the status write
 * needs). Creating a plan that exists already is the repeat of a crashed step, not an error.
 */
export async function writeBeforeStatus(context: StepContext, bookkeeping: Bookkeeping): Promise<void> {
  const { deps, snap } = context;
  for (const change of bookkeeping.plans) {
    if (change.kind === 'create') {
      const manifest = buildPlanManifest({
        target: {
          apiVersion: OUR_API_VERSION,
          kind: snap.ref.kind,
          name: snap.ref.name,
          namespace: snap.ref.namespace,
          uid: snap.uid,
        },
        job: change.job,
        inputsHash: change.inputsHash,
        plan: change.plan,
        labels: ownerLabels({
          kind: snap.ref.kind,
          name: snap.ref.name,
          uid: snap.uid,
          clusterName: snap.clusterName,
        }),
      });
      try {
        await deps.kube.writer.createCustomObject('TerraformPlan', {
          ...manifest,
          metadata: {
            ...manifest.metadata,
            ownerReferences: manifest.metadata.ownerReferences.map((owner) => ({ ...owner })),
          },
        });
      } catch (error) {
        if (!isKubeError(error, 'AlreadyExists')) throw error;
      }
    } else {
      await writePlanPhase(context, change);
    }
    deps.failpoints.hit('after-plan-write');
  }
  if (Object.keys(bookkeeping.spec).length > 0) {
    const written = await deps.kube.writer.patchSpec(
      snap.ref.kind,
      { namespace: snap.ref.namespace, name: snap.ref.name, resourceVersion: context.resourceVersion },
      bookkeeping.spec,
    );
    context.resourceVersion = written.metadata.resourceVersion;
    deps.failpoints.hit('after-contract-spec-patch');
  }
}

/** Sets a TerraformPlan's phase (Applied, Superseded) under its own resourceVersion; a gone plan is fine. */
export async function writePlanPhase(
  context: StepContext,
  change: Extract<PlanChange, { kind: 'phase' }>,
): Promise<void> {
  const { plan } = change;
  if (plan.status?.phase === change.phase) return;
  try {
    await context.deps.kube.writer.patchStatus(
      'TerraformPlan',
      {
        namespace: context.snap.ref.namespace,
        name: plan.metadata.name,
        resourceVersion: plan.metadata.resourceVersion ?? '',
      },
      {
        phase: change.phase,
        appliedBy: change.phase === 'Applied' ? change.job : null,
        message: context.redact(change.message),
      },
    );
  } catch (error) {
    // Gone or changed meanwhile (a person approved it this instant): the next step reads it again.
    if (!isKubeError(error, 'NotFound', 'Conflict')) throw error;
  }
}

/** Emits Events about the object, each once (deterministic name per transition). */
export async function emitEvents(context: StepContext, events: readonly RunEvent[]): Promise<void> {
  for (const event of events) {
    await context.deps.kube.writer.emitEvent({
      ...event,
      regarding: context.regarding,
      note: context.redact(event.note),
    });
    context.deps.failpoints.hit('after-event');
  }
}

/** Marks one Job bookkept; a Job changed meanwhile is read again once, a Job gone needs no mark. */
async function markBookkept(context: StepContext, run: FinishedRun): Promise<void> {
  const { writer, reader } = context.deps.kube;
  const namespace = context.snap.ref.namespace;
  const annotations = bookkeptAnnotations(run.classification.evidence, run.classification.finishedAt);
  let resourceVersion = run.job.metadata?.resourceVersion ?? '';
  for (let tries = 0; tries < 2; tries += 1) {
    try {
      await writer.patchJobMetadata({ namespace, name: run.record.name, resourceVersion }, { annotations });
      return;
    } catch (error) {
      if (isKubeError(error, 'NotFound')) return;
      if (!isKubeError(error, 'Conflict') || tries > 0) throw error;
      const fresh = await reader.getJob(namespace, run.record.name);
      if (!fresh) return;
      resourceVersion = fresh.metadata?.resourceVersion ?? '';
    }
  }
}

/** From the Job's start (its creation when it never started) to its classified finish, in seconds. */
function runSeconds(run: FinishedRun): number {
  const startedMs =
    run.job.status?.startTime?.getTime() ??
    run.job.metadata?.creationTimestamp?.getTime() ??
    run.record.createdAtMs;
  return Math.max(0, (run.classification.finishedAt.getTime() - startedMs) / 1000);
}

/**
 * Steps 2-4 of the write order, after the status write succeeded: Events, marks, per-run Secrets, leases
 * and slots, pruning (core selection, Background propagation, C13).
 */
export async function finishBookkeeping(context: StepContext, bookkeeping: Bookkeeping): Promise<void> {
  const { deps, snap } = context;
  await emitEvents(context, bookkeeping.events);
  for (const run of bookkeeping.runs) {
    await markBookkept(context, run);
    // After the mark: a step that crashed before it bookkeeps the Job again, and only then counts it.
    await deps.metrics.jobBookkept({
      object: snap.ref,
      job: run.record.name,
      classification: run.classification,
      durationSeconds: runSeconds(run),
    });
    deps.failpoints.hit('after-bookkept-mark');
  }
  for (const run of bookkeeping.runs) {
    await deps.kube.writer.deleteSecret(snap.ref.namespace, runSecretName(run.record.name));
    deps.failpoints.hit('after-run-secret-delete');
    const guard = runGuard(
      snap.ref,
      snap.clusterName,
      run.record.op,
      run.record.name,
      run.job.spec?.activeDeadlineSeconds ?? context.policy.activeDeadlineSeconds,
    );
    // An unanswered release is healed later: a lease held under a finished Job's name is stale (leases.ts).
    await releaseRunGuards(deps.redis, guard, run.record.name);
    deps.failpoints.hit('after-lease-release');
  }
  await releasePodFinalizers(context, bookkeeping.records, await prune(context, bookkeeping.records));
}

/** Deletes the Jobs above the history limits (src/core/prune.ts), each only in the incarnation we read. */
export async function prune(context: StepContext, records: readonly JobRecord[]): Promise<string[]> {
  const { deps, snap, policy } = context;
  const names = selectJobsToPrune(records, policy);
  for (const name of names) {
    const job = snap.jobs.find((j) => j.metadata?.name === name);
    await deps.kube.writer.deleteJob(
      snap.ref.namespace,
      name,
      job?.metadata?.uid ? { uid: job.metadata.uid } : {},
    );
    deps.failpoints.hit('after-prune-delete');
  }
  return names;
}
