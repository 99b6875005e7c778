import type { V1Job } from '@kubernetes/client-node';
import { outcomeOfFailedWrite } from '../adapters/kube/errors.ts';
import { OUR_API_VERSION } from '../adapters/kube/resources.ts';
import type { StartDecision } from '../core/decide.ts';
import { waitFor } from '../core/gates.ts';
import { LABELS } from '../core/job-labels.ts';
import { buildJobManifest } from '../core/job-manifest.ts';
import type { JobRecord } from '../core/job-record.ts';
import { jobName, nextAttempt } from '../core/names.ts';
import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import { activeStatus } from './active-status.ts';
import type { StepContext } from './context.ts';
import type { StepOutcome } from './contract.ts';
import { type RunGuard, releaseRunGuards, runGuard, takeRunGuards } from './leases.ts';
import { outcomeOf, unavailable } from './outcomes.ts';
import { isPodAlive } from './pods.ts';
import { type RunDecisions, resolveRunConfig } from './run-config.ts';
import { decisionAnnotations } from './run-decisions.ts';
import { createRunSecret } from './run-secret.ts';
import { staleLockToUnlock } from './stale-lock.ts';
import { commitStatus } from './status-write.ts';
import { toV1Job } from './views.ts';
import { waitStatus } from './wait-status.ts';

/**
 * Starting a Job (DESIGN.md section 5 steps 6-8): the run lease (and cluster lease) and Job slots, the API
 * guard (no pod of an earlier attempt alive), then Job → per-run Secret → `status.activeJob`, in that
 * order, under a deterministic name so a repeated step finds what a crashed one created. A rejected create
 * proves no Job exists and gives the leases back; a create whose answer was lost proves nothing and keeps
 * them.
 */

/** What the Job of a start is called and runs with. */
interface PlannedRun {
  name: string;
  attempt: number;
  decisions: RunDecisions;
  guard: RunGuard;
}

function plannedRun(
  context: StepContext,
  start: StartDecision,
  records: readonly JobRecord[],
  forceUnlockId: string | undefined,
): PlannedRun {
  const { snap, policy } = context;
  const attempt = nextAttempt(records, start.op);
  // Drift and refresh repeat with equal inputs; the newest success separates one run from the next.
  const tick =
    start.op === 'drift' || start.op === 'refresh' ? (context.draft.lastSuccess?.[start.op] ?? '') : '';
  const name = jobName({
    kind: snap.ref.kind,
    name: snap.ref.name,
    op: start.op,
    attempt,
    inputsHash: snap.inputsHash,
    tick,
  });
  return {
    name,
    attempt,
    decisions: {
      ...(start.plan ? { expectedPlanDigest: start.plan.digest } : {}),
      ...(forceUnlockId ? { forceUnlockId } : {}),
    },
    guard: runGuard(snap.ref, snap.clusterName, start.op, name, policy.activeDeadlineSeconds),
  };
}

/** Records a wait in the status and answers it. */
async function waitOutcome(
  context: StepContext,
  reason: WaitReason,
  op: StartDecision['op'],
  message: string,
  job?: string,
): Promise<StepOutcome> {
  const wait = waitFor(reason, { now: context.now, uid: context.snap.uid, op, message });
  const written = await commitStatus(context, waitStatus(context, context.draft, wait));
  if (written.kind === 'conflict')
    return outcomeOf(context, 'waiting', 'Conflict', 1, { message: written.message });
  return outcomeOf(context, 'waiting', reason, wait.requeueAfterSeconds, {
    message,
    ...(job ? { job } : {}),
  });
}

/** A Job found under our name is ours to adopt when it carries this object's UID, op and attempt. */
function isOurs(job: V1Job, context: StepContext, start: StartDecision, attempt: number): boolean {
  const labels = job.metadata?.labels ?? {};
  return (
    labels[LABELS.ownerUid] === context.snap.uid &&
    labels[LABELS.op] === start.op &&
    labels[LABELS.attempt] === String(attempt) &&
    job.metadata?.ownerReferences?.some((owner) => owner.uid === context.snap.uid) === true &&
    job.metadata?.deletionTimestamp === undefined
  );
}

type CreateResult =
  | { kind: 'created'; job: V1Job }
  | { kind: 'adopted'; job: V1Job }
  | { kind: 'foreign'; message: string }
  | { kind: 'rejected'; message: string };

/** Creates the Job; adopts ours on AlreadyExists (C02); `foreign`/`rejected` mean nothing of ours exists. */
async function createOrAdopt(
  context: StepContext,
  manifest: V1Job,
  start: StartDecision,
  attempt: number,
): Promise<CreateResult> {
  const { reader, writer } = context.deps.kube;
  const name = manifest.metadata?.name ?? '';
  try {
    return { kind: 'created', job: await writer.createJob(manifest) };
  } catch (error) {
    const outcome = outcomeOfFailedWrite(error);
    if (outcome === 'unknown') throw error;
    if (outcome === 'rejected')
      return { kind: 'rejected', message: error instanceof Error ? error.message : 'create Job rejected' };
    const existing = await reader.getJob(context.snap.ref.namespace, name);
    if (existing && isOurs(existing, context, start, attempt)) return { kind: 'adopted', job: existing };
    return { kind: 'foreign', message: `a Job named ${name} exists and is not this object's` };
  }
}

/** Starts the Job of `start` (gates passed). */
export async function startJob(
  context: StepContext,
  start: StartDecision,
  records: readonly JobRecord[],
): Promise<StepOutcome> {
  const { deps, snap, policy } = context;
  const spec = snap.spec;
  if (!spec) return outcomeOf(context, 'waiting', 'SpecInvalid', 600);
  const pods = await snap.pods();
  const run = plannedRun(context, start, records, staleLockToUnlock(snap.jobs, records, pods));

  // Resolve the run config first: a missing Secret must hold the start back before anything is taken.
  const resolved = await resolveRunConfig(context, run.decisions);
  if (resolved.kind === 'missing')
    return waitOutcome(context, 'WaitingForDependencies', start.op, resolved.message);

  const liveJobs = new Set(records.filter((r) => !r.finished).map((r) => r.name));
  const taken = await takeRunGuards(
    deps.redis,
    deps.config,
    run.guard,
    run.name,
    start.op,
    (holder) => liveJobs.has(holder),
    () => deps.failpoints.hit('after-lease-take'),
  );
  if (taken.kind === 'unknown') return unavailable(context, `take the run lease: ${taken.cause.message}`);
  if (taken.kind === 'wait') return waitOutcome(context, taken.reason, start.op, taken.message);
  deps.failpoints.hit('after-slot-take');

  // API guard (section 5 step 7): Redis is never the only guard against a second run.
  const alive = pods.filter((pod) => isPodAlive(pod) && pod.metadata?.labels?.['job-name'] !== run.name);
  if (alive.length > 0) {
    await releaseRunGuards(deps.redis, run.guard, run.name);
    const names = alive.map((pod) => pod.metadata?.name ?? '').join(', ');
    return waitOutcome(
      context,
      'WaitingForPreviousAttempt',
      start.op,
      `pod(s) of an earlier attempt still run: ${names}`,
    );
  }

  const manifest = buildJobManifest({
    owner: {
      apiVersion: OUR_API_VERSION,
      kind: snap.ref.kind,
      name: snap.ref.name,
      namespace: snap.ref.namespace,
      uid: snap.uid,
      generation: snap.generation,
      clusterName: snap.clusterName ?? '',
    },
    name: run.name,
    op: start.op,
    attempt: run.attempt,
    inputsHash: snap.inputsHash,
    // Every op but apply runs the digest the newest successful apply ran (DESIGN.md section 2).
    image:
      start.op === 'apply' ? spec.source.image : (context.draft.source?.pinnedImage ?? spec.source.image),
    runnerImage: deps.config.runnerImage,
    policy,
  });
  const job = toV1Job(manifest, decisionAnnotations(run.decisions));
  const created = await createOrAdopt(context, job, start, run.attempt);
  if (created.kind === 'rejected' || created.kind === 'foreign') {
    const released = await releaseRunGuards(deps.redis, run.guard, run.name);
    if (released !== 'released') return unavailable(context, 'release the run lease: Redis did not answer');
    if (created.kind === 'foreign')
      return waitOutcome(context, 'WaitingForForeignJob', start.op, created.message, run.name);
    return outcomeOf(context, 'waiting', 'JobCreateRejected', 60, {
      message: created.message,
      job: run.name,
    });
  }
  // Created or adopted: the active set is idempotent per Job name, so an adoption never counts twice.
  await deps.metrics.jobStarted({ namespace: snap.ref.namespace, name: run.name });
  deps.failpoints.hit('after-job-create');

  await createRunSecret(context, created.job, resolved.config);

  const active = { name: run.name, op: start.op, attempt: run.attempt, startedAt: context.now.toISOString() };
  const written = await commitStatus(
    context,
    activeStatus(
      context,
      context.draft,
      active,
      'JobActive',
      `${start.op} Job ${run.name} runs (${start.reason})`,
    ),
  );
  if (written.kind === 'conflict')
    return outcomeOf(context, 'waiting', 'Conflict', 1, { message: written.message, job: run.name });
  deps.failpoints.hit('after-active-status');

  await deps.kube.writer.emitEvent({
    regarding: context.regarding,
    related: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      namespace: snap.ref.namespace,
      name: run.name,
      uid: created.job.metadata?.uid ?? '',
    },
    type: 'Normal',
    reason: 'JobCreated',
    action: 'CreateJob',
    note: `${start.op} Job ${run.name} (attempt ${run.attempt}, ${start.reason})`,
    transitionKey: run.name,
  });
  deps.failpoints.hit('after-event');
  if (run.decisions.forceUnlockId) {
    const emitted = await deps.kube.writer.emitEvent({
      regarding: context.regarding,
      type: 'Warning',
      reason: 'ForceUnlocked',
      action: 'CreateJob',
      note: `Job ${run.name} force-unlocks the stale state lock ${run.decisions.forceUnlockId}`,
      transitionKey: run.decisions.forceUnlockId,
    });
    // The Event's deterministic name makes its first creation the one transition to count (an adopted Job
    // after a crash finds it emitted).
    if (emitted === 'created') deps.metrics.forceUnlocked();
    deps.failpoints.hit('after-event');
  }
  return outcomeOf(context, 'created', start.reason, 60, { job: run.name });
}
