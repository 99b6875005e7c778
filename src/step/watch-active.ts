import type { V1Job } from '@kubernetes/client-node';
import { ANNOTATIONS } from '../core/job-labels.ts';
import type { JobRecord } from '../core/job-record.ts';
import { runSecretName } from '../core/names.ts';
import { watchActiveJob } from '../core/watch.ts';
import { activeStatus } from './active-status.ts';
import { finishBookkeeping, prepareBookkeeping, writeBeforeStatus } from './bookkeep.ts';
import type { StepContext } from './context.ts';
import type { StepOutcome } from './contract.ts';
import { releaseRunGuards, renewRunGuards, runGuard } from './leases.ts';
import { outcomeOf, unavailable } from './outcomes.ts';
import { releasePodFinalizers } from './pod-finalizers.ts';
import { isPodAlive, podsOfJob } from './pods.ts';
import { resolveRunConfig } from './run-config.ts';
import { decisionsOf } from './run-decisions.ts';
import { createRunSecret } from './run-secret.ts';
import type { TargetStatus } from './snapshot.ts';
import { commitStatus } from './status-write.ts';
import { asJobView, asPodView } from './views.ts';

/**
 * Watching an active Job (DESIGN.md section 5 step 4): renew its lease and slot, adopt it when an earlier
 * step crashed after creating it (C02: create the missing per-run Secret, write `status.activeJob`),
 * surface pull trouble at once (C09), enforce the deadline when the Job controller is late, and delete a
 * Job stuck without its Secret. Requeue at most 60 s later.
 */

/** Watches `record`'s Job (unfinished, or bookkept but not yet deleted). */
export async function watchActive(context: StepContext, job: V1Job, record: JobRecord): Promise<StepOutcome> {
  const { deps, snap } = context;
  const pods = podsOfJob(job, await snap.pods());
  const guard = runGuard(
    snap.ref,
    snap.clusterName,
    record.op,
    record.name,
    job.spec?.activeDeadlineSeconds ?? context.policy.activeDeadlineSeconds,
  );

  // A Job bookkept by a step that then died before deleting it (deadline enforcement): finish the delete.
  if (record.bookkept) {
    await deps.kube.writer.deleteJob(snap.ref.namespace, record.name, { uid: job.metadata?.uid ?? '' });
    deps.failpoints.hit('after-deadline-delete');
    return outcomeOf(context, 'bookkept', 'JobDeadlineExceeded', 1, { job: record.name });
  }

  // Reading the Secret costs a request; only a Job with no started pod can be missing it (section 5 step 4).
  const started = pods.some((pod) => pod.status?.phase !== 'Pending');
  const runSecretExists =
    started ||
    (await deps.kube.reader.getSecret(snap.ref.namespace, runSecretName(record.name))) !== undefined;
  const verdict = watchActiveJob({
    now: context.now,
    job: asJobView(job),
    pods: pods.map(asPodView),
    runSecretExists,
  });

  if (verdict.kind === 'delete' && verdict.reason === 'JobDeadlineExceeded') {
    return enforceDeadline(context, job, record, verdict.message);
  }
  if (verdict.kind === 'delete') {
    // Stuck: the Job never started and cannot (its Secret is gone and its inputs moved on). No run to record.
    await deps.kube.writer.emitEvent({
      regarding: context.regarding,
      type: 'Warning',
      reason: 'StuckJobDeleted',
      action: 'DeleteJob',
      note: `Job ${record.name}: ${verdict.message}`,
      transitionKey: record.name,
    });
    deps.failpoints.hit('after-event');
    await deps.kube.writer.deleteJob(snap.ref.namespace, record.name, { uid: job.metadata?.uid ?? '' });
    deps.failpoints.hit('after-stuck-delete');
    const released = await releaseRunGuards(deps.redis, guard, record.name);
    if (released !== 'released') return unavailable(context, 'the Redis release did not answer');
    const next: TargetStatus = { ...context.draft };
    if (next.activeJob?.name === record.name) delete next.activeJob;
    delete next.waitReason;
    const written = await commitStatus(context, next);
    if (written.kind === 'conflict')
      return outcomeOf(context, 'waiting', 'Conflict', 1, { message: written.message });
    return outcomeOf(context, 'waiting', 'StuckJobDeleted', 1, {
      job: record.name,
      message: verdict.message,
    });
  }

  const renewed = await renewRunGuards(deps.redis, guard, record.name);
  if (renewed !== 'renewed' && renewed !== 'held-by-other')
    return unavailable(context, 'the Redis lease renewal did not answer');
  deps.failpoints.hit('after-lease-renew');

  if (
    !runSecretExists &&
    job.metadata?.annotations?.[ANNOTATIONS.inputsHash] === snap.inputsHash &&
    pods.every((pod) => isPodAlive(pod))
  ) {
    // C02: the step that created the Job died before its Secret; the same inputs give the same run config.
    const resolved = await resolveRunConfig(context, decisionsOf(job));
    if (resolved.kind === 'missing') {
      return outcomeOf(context, 'watching', 'WaitingForDependencies', 30, {
        job: record.name,
        message: resolved.message,
      });
    }
    await createRunSecret(context, job, resolved.config);
  }

  const startedAt = job.metadata?.creationTimestamp
    ? new Date(job.metadata.creationTimestamp).toISOString()
    : context.now.toISOString();
  const attempt = Math.max(1, record.attempt);
  const current = context.draft.activeJob;
  const active =
    current?.name === record.name ? current : { name: record.name, op: record.op, attempt, startedAt };
  const message =
    verdict.reason === 'ImagePullBackOff' ? verdict.message : `${record.op} Job ${record.name} runs`;
  const next = activeStatus(context, context.draft, active, verdict.reason, message);
  const written = await commitStatus(context, next);
  if (written.kind === 'conflict')
    return outcomeOf(context, 'waiting', 'Conflict', 1, { message: written.message });
  if (written.kind === 'written') deps.failpoints.hit('after-active-status');
  return outcomeOf(context, 'watching', verdict.reason, verdict.requeueAfterSeconds, {
    job: record.name,
    ...(verdict.reason === 'ImagePullBackOff' ? { message: verdict.message } : {}),
  });
}

/**
 * The Job controller is late (deadline + grace + 60 s passed): record the run as `JobDeadlineExceeded`
 * first (bookkeeping order), then delete the Job with Background propagation.
 */
async function enforceDeadline(
  context: StepContext,
  job: V1Job,
  record: JobRecord,
  message: string,
): Promise<StepOutcome> {
  const { deps, snap } = context;
  const bookkeeping = await prepareBookkeeping(context, [{ job, record }], new Set([record.name]));
  await writeBeforeStatus(context, bookkeeping);
  const written = await commitStatus(context, bookkeeping.status);
  if (written.kind === 'conflict')
    return outcomeOf(context, 'waiting', 'Conflict', 1, { message: written.message });
  deps.failpoints.hit('after-bookkeep-status');
  await finishBookkeeping(context, bookkeeping);
  await deps.kube.writer.deleteJob(snap.ref.namespace, record.name, { uid: job.metadata?.uid ?? '' });
  deps.failpoints.hit('after-deadline-delete');
  await releasePodFinalizers(context, bookkeeping.records, [record.name]);
  return outcomeOf(context, 'bookkept', 'JobDeadlineExceeded', 1, { job: record.name, message });
}
