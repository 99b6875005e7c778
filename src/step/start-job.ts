import type { V1Job } from '@kubernetes/client-node';
import { isKubeError, KubeError, outcomeOfFailedWrite } from '../adapters/kube/errors.ts';
import { BLOCK_MOVE_ANNOTATION } from '../core/block-move.ts';
import type { EventObjectRef } from '../core/event-spec.ts';
import { nameHolderOf } from '../core/own-jobs.ts';
import { heldOutcome } from '../core/planner/start.ts';
import { outcomeOf, type StepOutcome } from '../core/step-outcome.ts';
import type { HeldWait, PlannedStart } from '../core/step-plan.ts';
import { releaseRunGuards, runGuard, takeRunGuards } from './leases.ts';
import { ensureOutputsSecret } from './outputs-secret.ts';
import { conflict, emitEvents, type Performance, unavailable } from './perform.ts';
import { runConfigOf } from './run-config.ts';
import { createRunSecret } from './run-secret.ts';
import { ensureCheckedRunnerIdentity } from './runner-identity.ts';
import { asJobView, toV1Job } from './views.ts';

type CreateResult =
  | { kind: 'created'; job: V1Job }
  | { kind: 'adopted'; job: V1Job }
  | { kind: 'foreign'; message: string }
  | { kind: 'taken'; message: string }
  | { kind: 'rejected'; error: KubeError };

/**
 * Most names one step passes over (DESIGN.md section 5 step 8): past them it waits, its status keeping
 * the skipped attempts as used, and the next step goes on from there. A predecessor leaves at most its
 * retained Jobs per op; the bound keeps one step's cost in check whatever a person left.
 */
export const MAX_SKIPPED_JOB_NAMES = 8;

/**
 * Creates the Job; on AlreadyExists adopts ours (C02). `foreign`: another's Job that runs holds the name;
 * `taken`: another's finished Job holds it; `rejected`: the API server refused the create. In all three
 * nothing of ours exists.
 */
async function createOrAdopt(performance: Performance, start: PlannedStart): Promise<CreateResult> {
  const { deps, snap } = performance;
  try {
    return {
      kind: 'created',
      job: await deps.kube.writer.createJob(toV1Job(start.manifest, start.annotations)),
    };
  } catch (error) {
    const outcome = outcomeOfFailedWrite(error);
    if (outcome === 'unknown') throw error;
    if (outcome === 'rejected' && error instanceof KubeError) return { kind: 'rejected', error };
    const existing = await deps.kube.reader.getJob(snap.ref.namespace, start.name);
    // Gone since the create answered: another's all the same (ours are not deleted while a start runs).
    if (!existing) return { kind: 'foreign', message: `a Job named ${start.name} was there a moment ago` };
    const holder = nameHolderOf(asJobView(existing), { uid: snap.uid, op: start.op, attempt: start.attempt });
    if (holder === 'ours') return { kind: 'adopted', job: existing };
    if (holder === 'foreign-finished')
      return { kind: 'taken', message: `a finished Job named ${start.name} is not this object's` };
    return { kind: 'foreign', message: `a Job named ${start.name} runs and is not this object's` };
  }
}

/** What a start came to: done, or its name is held by another's finished Job (plan again past it). */
export type StartPerformed = { kind: 'done'; outcome: StepOutcome } | { kind: 'name-taken'; job: string };

/**
 * Starting a Job (DESIGN.md section 5 steps 6-8): the run lease (and cluster lease) and Job slots, then
 * the outputs Secret → the runner identity → Job → per-run Secret → `status.activeJob`, in that order, under a deterministic name so a repeated step
 * finds what a crashed one created. A rejected create proves no Job exists and gives the guards back; a
 * create whose answer was lost proves nothing and keeps them. A name held by another's finished Job gives
 * the guards back and answers `name-taken`: the step plans again past that name (src/step/step.ts).
 */
export async function performStart(performance: Performance, start: PlannedStart): Promise<StartPerformed> {
  const outcome = await startJob(performance, start);
  return 'kind' in outcome ? outcome : { kind: 'done', outcome };
}

async function startJob(
  performance: Performance,
  start: PlannedStart,
): Promise<StepOutcome | { kind: 'name-taken'; job: string }> {
  const { deps, snap, writes, lock } = performance;
  // A step that outlived its lock (src/step/step-lock.ts) starts nothing: another step may own the object.
  if (lock.lost()) return outcomeOf(snap.ref, 'StepLockLost');
  const held = async (wait: HeldWait): Promise<StepOutcome> => {
    const answer = heldOutcome(start, wait, snap);
    if (answer.status !== undefined && (await writes.status(answer.status)) === 'conflict')
      return conflict(performance);
    return answer.outcome;
  };
  const guard = runGuard(snap.ref, snap.clusterName, start.guard);
  const liveJobs = new Set(snap.records.filter((r) => !r.finished).map((r) => r.name));
  const taken = await takeRunGuards(
    deps.redis,
    deps.config,
    guard,
    start.name,
    start.op,
    (holder) => liveJobs.has(holder),
    () => deps.failpoints.hit('after-lease-take'),
  );
  if (taken.kind === 'unknown') return unavailable(performance, `take the run lease: ${taken.cause.message}`);
  if (taken.kind === 'wait')
    return held({
      reason: taken.reason,
      message: taken.message,
      ...(taken.slotScope === undefined ? {} : { slotScope: taken.slotScope }),
    });
  deps.failpoints.hit('after-slot-take');
  // One metadata write before the Job exists, under the version read: Cluster API's block-move annotation
  // (src/core/block-move.ts: a move waits while it is there, so no Job runs without it) and, when this start
  // spends it, the consent to apply from an empty state (a crash in between asks the person again and never
  // applies from an empty state unasked). A changed object (Conflict) is read again.
  const annotations: Record<string, string | null> = {
    ...(performance.plan.blockMove === 'add' && !writes.carriesBlockMove
      ? { [BLOCK_MOVE_ANNOTATION]: '' }
      : {}),
    ...(start.consumeAnnotation !== undefined ? { [start.consumeAnnotation]: null } : {}),
  };
  if (Object.keys(annotations).length > 0) {
    const failed = await writes.metadata({ annotations }).then(
      () => undefined,
      (error: unknown) => error,
    );
    if (failed !== undefined) {
      const released = await releaseRunGuards(deps.redis, guard, start.name);
      if (released !== 'released')
        return unavailable(performance, 'release the run lease: Redis did not answer');
      if (isKubeError(failed, 'Conflict')) return conflict(performance);
      throw failed;
    }
    if (BLOCK_MOVE_ANNOTATION in annotations) deps.failpoints.hit('after-block-move');
  }
  /**
   * Gives the run guards back when no Job came of this start, and first the consent to apply from an empty
   * state it spent: that consent was for this apply, which did not happen (a create refused, say by a quota,
   * or a name another's Job holds), so the next start may use it. Best effort: a write that fails (the object
   * changed meanwhile) or a crash before it leaves the consent spent, and the object asks the person again,
   * as before the give-back.
   */
  const noJob = async (): ReturnType<typeof releaseRunGuards> => {
    if (start.consumeAnnotation !== undefined) {
      const consent = snap.meta.annotations?.[start.consumeAnnotation] ?? 'true';
      await writes.metadata({ annotations: { [start.consumeAnnotation]: consent } }).catch(() => undefined);
    }
    return releaseRunGuards(deps.redis, guard, start.name);
  };

  if (start.outputsSecret) {
    // Before the identity that may update it: a Secret of that name that is not the object's is never
    // granted (src/core/outputs-secret.ts).
    const ensured = await ensureOutputsSecret(deps.kube, start.outputsSecret, snap.uid).catch(
      (error: unknown) => {
        if (error instanceof KubeError) return error;
        throw error;
      },
    );
    if (ensured instanceof KubeError || ensured.kind === 'foreign') {
      const released = await noJob();
      if (released !== 'released')
        return unavailable(performance, 'release the run lease: Redis did not answer');
      if (ensured instanceof KubeError && (ensured.outage || ensured.code === 'Conflict'))
        return unavailable(performance, `put the outputs Secret in place: ${ensured.message}`);
      // Refused, or a Secret of that name that is not the object's (as good as a create refused
      // AlreadyExists): the step ends as a refused write (src/core/write-refusal.ts).
      if (ensured instanceof KubeError) throw ensured;
      throw new KubeError('AlreadyExists', `put the outputs Secret in place: ${ensured.message}`, {
        cause: undefined,
        httpStatus: 409,
        reason: 'AlreadyExists',
      });
    }
  }

  if (start.identity) {
    // Before the Job: its pod is admitted only once its ServiceAccount exists. Nothing of the run exists
    // yet, so a failure gives the guards back; a refusal then ends the step as one (src/core/write-refusal.ts).
    const ensured = await ensureCheckedRunnerIdentity(
      { kube: deps.kube, checks: deps.redis.identityChecks },
      snap.uid,
      start.identity,
      start.restoreStateSecret !== undefined ? { restoreStateSecret: start.restoreStateSecret } : {},
    ).catch((error: unknown) => {
      if (error instanceof KubeError) return error;
      throw error;
    });
    if (ensured instanceof KubeError) {
      const released = await noJob();
      if (released !== 'released')
        return unavailable(performance, 'release the run lease: Redis did not answer');
      throw ensured;
    }
    deps.failpoints.hit('after-runner-identity');
  }

  const created = await createOrAdopt(performance, start);
  if (created.kind === 'foreign' || created.kind === 'taken' || created.kind === 'rejected') {
    // Taken under this name: given back before a start under another name takes them again (the consent
    // too: that start may end before its own metadata write, and it spends the consent again if it gets there).
    const released = await noJob();
    if (released !== 'released')
      return unavailable(performance, 'release the run lease: Redis did not answer');
    // Refused: no Job exists (section 5 step 8); the step ends as a refused write.
    if (created.kind === 'rejected') throw created.error;
    if (created.kind === 'foreign') return held({ reason: 'WaitingForForeignJob', message: created.message });
    if (start.skipped.length < MAX_SKIPPED_JOB_NAMES) return { kind: 'name-taken', job: start.name };
    return held({
      reason: 'WaitingForForeignJob',
      message: `${created.message}; ${start.skipped.length} names passed over already, the next step goes on`,
    });
  }
  // Created or adopted: the active set is idempotent per Job name, so an adoption never counts twice.
  await deps.metrics.jobStarted({ namespace: snap.ref.namespace, name: start.name });
  deps.failpoints.hit('after-job-create');

  const config = await runConfigOf(deps.kube, { ref: snap.ref, uid: snap.uid }, start.inputs);
  const bytes = await createRunSecret(deps.kube, snap.ref.namespace, created.job, config);
  deps.failpoints.hit('after-run-secret-create');
  await deps.metrics.sizeMeasured({ ...snap.ref, what: 'inputs', bytes });

  if ((await writes.status(start.status)) === 'conflict') return conflict(performance, start.name);
  deps.failpoints.hit('after-active-status');

  const related: EventObjectRef = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    namespace: snap.ref.namespace,
    name: start.name,
    uid: created.job.metadata?.uid ?? '',
  };
  await emitEvents(performance, [start.createdEvent], related);
  if (start.forceUnlockEvent) {
    // The Event's deterministic name makes its first creation the one transition to count (an adopted Job
    // after a crash finds it emitted).
    const emitted = await emitEvents(performance, [start.forceUnlockEvent]);
    if (emitted.length > 0) deps.metrics.forceUnlocked();
  }
  return start.outcome;
}
