import type { TargetStatus } from '../../schemas/kinds/target.ts';
import { withStarted } from '../attempts.ts';
import { runEvent } from '../event-spec.ts';
import { ANNOTATIONS, runClusterOf } from '../job-labels.ts';
import type { JobRecord } from '../job-record.ts';
import { activeStatus } from '../move-status.ts';
import { isPodAlive, podsOfJob } from '../pods.ts';
import { decisionsOf } from '../run-decisions.ts';
import { resolveRunInputs } from '../run-inputs.ts';
import type { RunConfigSource } from '../run-secret-manifest.ts';
import type { Planned, PlanRead } from '../step-plan.ts';
import type { JobView } from '../views.ts';
import { waitFor } from '../wait-table.ts';
import { shownPullTrouble, watchActiveJob } from '../watch.ts';
import { finish } from './assemble.ts';
import {
  type Base,
  bare,
  guardOf,
  jobRef,
  outcome,
  type Planning,
  pausedStatus,
  secretWaitOf,
  waitOutcome,
} from './context.ts';

/**
 * Watching the object's active Job (DESIGN.md section 5 step 4): its verdict, the deadline enforced when
 * the Job controller is late, a stuck or unstarted Job deleted, an adopted Job's per-run Secret.
 */

/** The watch verdict of the active Job, once its per-run Secret is known where it matters. */
export type Watched =
  | { kind: 'read'; read: PlanRead }
  | {
      kind: 'verdict';
      job: JobView;
      record: JobRecord;
      verdict: ReturnType<typeof watchActiveJob>;
      runSecretExists: boolean;
    };

/** The active Job's watch verdict; a read of its per-run Secret first when no pod of it started. */
export function watchOf(planning: Planning, record: JobRecord): Watched | undefined {
  const { snap, facts } = planning;
  const job = snap.jobs.find((j) => j.metadata.name === record.name);
  if (!job) return undefined;
  const pods = podsOfJob(job, facts.pods ?? []);
  // Reading the Secret costs a request; only a Job with no started pod can be missing it (section 5 step 4).
  const started = pods.some((pod) => pod.status?.phase !== 'Pending');
  if (!started && facts.runSecretExists === undefined) return { kind: 'read', read: 'run-secret' };
  const runSecretExists = started || facts.runSecretExists === true;
  const shown = shownPullTrouble(snap.status, record.name, record.op);
  return {
    kind: 'verdict',
    job,
    record,
    verdict: watchActiveJob({
      now: facts.now,
      job,
      pods,
      runSecretExists,
      deleting: snap.meta.deletionTimestamp !== undefined,
      op: record.op,
      ...(shown === undefined ? {} : { pullTroubleShown: shown }),
    }),
    runSecretExists,
  };
}

/** The Job controller is late (section 5 step 4): the run is recorded first, then the Job deleted. */
export function planDeadlineEnforced(
  base: Base,
  watched: Extract<Watched, { kind: 'verdict' }>,
  active: JobRecord,
): Planned {
  const { planning } = base;
  const pods = podsOfJob(watched.job, planning.facts.pods ?? []);
  return finish(
    base,
    base.status,
    { kind: 'delete-job', job: jobRef(watched.job), releasePods: pods.map((pod) => pod.metadata.name) },
    outcome(planning, 'JobDeadlineExceeded', {
      requeueAfterSeconds: 1,
      job: active.name,
      ...(watched.verdict.kind === 'delete' ? { message: watched.verdict.message } : {}),
    }),
    false,
  );
}

/** DecideOp's `watch` of the Job `name`: a recorded leftover deleted, the cache awaited, or the watch. */
export function planWatchDecision(base: Base, name: string, watched: Watched | undefined): Planned {
  const { planning, status, records } = base;
  const { snap, facts } = planning;
  const record = records.find((r) => r.name === name);
  const job = snap.jobs.find((j) => j.metadata.name === name);
  if (record?.bookkept && job) {
    // Recorded by a step that then died before deleting it (deadline enforcement): finish the delete.
    return finish(
      base,
      status,
      { kind: 'delete-job', job: jobRef(job), releasePods: [] },
      outcome(planning, 'JobDeadlineExceeded', { requeueAfterSeconds: 1, job: name }),
      false,
    );
  }
  if (watched?.kind !== 'verdict' || watched.record.name !== name) {
    const wait = waitFor('WaitingForCache', {
      now: facts.now,
      uid: snap.uid,
      message: 'the Job is not listed yet',
    });
    return bare({ kind: 'none' }, waitOutcome(base, wait));
  }
  return planWatch(base, watched);
}

/** Watching the active Job (DESIGN.md section 5 step 4), past deadline enforcement. */
function planWatch(base: Base, watched: Extract<Watched, { kind: 'verdict' }>): Planned {
  const { planning } = base;
  const { snap, facts } = planning;
  const { job, record, verdict } = watched;
  const ref = jobRef(job);
  const guard = guardOf(
    record.op,
    record.name,
    job.spec?.activeDeadlineSeconds ?? planning.policy.activeDeadlineSeconds,
    runClusterOf(job),
  );

  if (verdict.kind === 'delete') {
    // Stuck (its Secret is gone) or unstarted while the object is deleting: no tofu ran, no run to record.
    const next: TargetStatus = { ...base.status };
    if (next.activeJob?.name === record.name) delete next.activeJob;
    delete next.waitReason;
    const stuck = runEvent(verdict.reason, {
      action: 'DeleteJob',
      note: planning.redactor.redact(`Job ${record.name}: ${verdict.message}`),
      transitionKey: record.name,
    });
    return finish(
      { ...base, events: [...base.events, stuck] },
      next,
      { kind: 'delete-job', job: ref, release: guard, releasePods: [] },
      outcome(planning, verdict.reason, { job: record.name, message: verdict.message }),
      false,
    );
  }

  // C02: the step that created the Job died before its Secret; the same inputs give the same run config.
  const pods = podsOfJob(job, facts.pods ?? []);
  let adopt: Omit<RunConfigSource, 'planHmacKey'> | undefined;
  if (
    !watched.runSecretExists &&
    job.metadata.annotations?.[ANNOTATIONS.inputsHash] === snap.inputsHash &&
    pods.every((pod) => isPodAlive(pod))
  ) {
    const inputs = resolveRunInputs(
      snap,
      record.op,
      planning.policy,
      decisionsOf(job),
      facts.config.stateEncryption,
    );
    if (inputs.kind !== 'resolved') {
      const reason = inputs.kind === 'missing' ? 'WaitingForDependencies' : 'VariablesSecretNotOptedIn';
      const wait = waitFor(reason, {
        now: facts.now,
        uid: snap.uid,
        op: record.op,
        message: inputs.message,
      });
      return finish(
        base,
        base.status,
        { kind: 'none' },
        { ...waitOutcome(base, wait), ...secretWaitOf(snap.ref, inputs.secret), job: record.name },
        false,
      );
    }
    adopt = inputs.source;
  }
  const createdAt = job.metadata.creationTimestamp
    ? new Date(job.metadata.creationTimestamp).toISOString()
    : facts.now.toISOString();
  const current = base.status.activeJob;
  const activeJob =
    current?.name === record.name
      ? current
      : { name: record.name, op: record.op, attempt: Math.max(1, record.attempt), startedAt: createdAt };
  const message = verdict.reason === 'JobActive' ? `${record.op} Job ${record.name} runs` : verdict.message;
  const watching = activeStatus(
    planning.statusContext,
    { ...base.status, attempts: withStarted(base.status.attempts, record.op, activeJob.attempt) },
    activeJob,
    verdict.reason,
    message,
  );
  return finish(
    base,
    base.status,
    {
      kind: 'watch',
      job: { ...ref, op: record.op, attempt: activeJob.attempt },
      guard,
      status: pausedStatus(planning, { ...watching, observedGeneration: snap.generation }),
      ...(adopt ? { adopt } : {}),
    },
    outcome(planning, verdict.reason, {
      requeueAfterSeconds: verdict.requeueAfterSeconds,
      job: record.name,
      ...(verdict.reason !== 'JobActive' ? { message: verdict.message } : {}),
    }),
    false,
  );
}
