import type { TargetStatus } from '../../schemas/kinds/target.ts';
import type { JobRecord } from '../job-record.ts';
import { lockHoldingJob } from '../lock-evidence.ts';
import { withGeneration } from '../observed-generation.ts';
import { orphanedPodsToDelete } from '../orphaned-pods.ts';
import { podsToRelease } from '../pod-release.ts';
import { selectJobsToPrune } from '../prune.ts';
import { runLogSecretName } from '../run-log.ts';
import type { StepOutcome } from '../step-outcome.ts';
import type { Move, Planned } from '../step-plan.ts';
import { releaseWakes } from '../wake.ts';
import { type Base, changed, jobRef, type Planning, pausedStatus } from './context.ts';

/**
 * The last phase of every plan (src/core/planner.ts): the writes the move comes with, pruning after
 * bookkeeping, and the pods no bookkeeping reads again.
 */

/**
 * Assembles a plan: the bookkeeping writes, `status` as the next status, pruning (always after
 * bookkeeping; on a resting step too), and the pods whose finalizer goes with them.
 */
export function finish(
  base: Base,
  status: TargetStatus,
  move: Move,
  result: StepOutcome,
  prunes: boolean,
): Planned {
  const { planning, bookkeeping, records } = base;
  const { snap, facts } = planning;
  const pruneNames = prunes || bookkeeping ? selectJobsToPrune(records, planning.policy) : [];
  // Once our finalizer goes nothing reads the object's pods again: they are released before it (crash-safe).
  const ownerGone = move.kind === 'finalizers' && move.gone;
  const needsPods =
    bookkeeping !== undefined || pruneNames.length > 0 || facts.heldPod !== undefined || ownerGone;
  if (needsPods && facts.pods === undefined) return { kind: 'read', read: 'pods' };
  // Never the Job whose pod holds the state lock the newest run reported (issue 23 item 8): the stale-lock
  // rules (section 12) find the holder among the object's Jobs until a later run got through.
  const holding =
    pruneNames.length > 0 && facts.pods !== undefined
      ? lockHoldingJob(snap.jobs, records, facts.pods, facts.now)
      : undefined;
  const prune = pruneNames
    .filter((name) => name !== holding)
    .flatMap((name) => {
      const job = snap.jobs.find((j) => j.metadata.name === name);
      return job ? [{ ...jobRef(job), runLog: runLogSecretName(name) }] : [];
    });
  // Whenever the pods were read (to bookkeep, watch or guard a start), what the rule allows is released:
  // a held pod of a Job deleted by hand would otherwise hold the next start back until the sweep; and the
  // pods a Job deleted with orphaning left, once they no longer run, are deleted.
  const released =
    facts.pods !== undefined
      ? podsReleasedBy(
          planning,
          records,
          prune.map((p) => p.uid),
          ownerGone,
        )
      : [];
  // A cluster whose apply this step recorded is ready: its machines and pools waiting for it go now.
  const ready =
    snap.ref.kind === 'TerraformCluster' &&
    (bookkeeping?.runs.some((run) => run.classification.success && run.classification.op === 'apply') ??
      false);
  // Recording a finished Job (or deleting a stuck one) releases its leases and slots: their waiters go now.
  const releases = (bookkeeping?.runs.length ?? 0) > 0 || (move.kind === 'delete-job' && move.release);
  const wakes = releases ? { wakes: releaseWakes(snap.ref, snap.clusterName) } : {};
  return {
    kind: 'plan',
    bookkept: bookkeeping?.runs ?? [],
    plans: base.planWrites,
    spec: bookkeeping && Object.keys(bookkeeping.spec).length > 0 ? bookkeeping.spec : undefined,
    // Written only when something changed; a write always names the generation it saw.
    // A start or a watch writes its own status with the Paused condition (its move's); the rest here.
    status: withGeneration(
      changed(
        snap.status,
        move.kind === 'rest' || move.kind === 'delete-job' ? pausedStatus(planning, status) : status,
      ),
      snap.generation,
    ),
    events: base.events,
    prune,
    releasePods: released,
    lostRunSecrets: base.lostRunSecrets,
    deletePods: orphanedPodsToDelete(
      facts.pods ?? [],
      new Set(snap.jobs.flatMap((job) => (job.metadata.uid === undefined ? [] : [job.metadata.uid]))),
    ).map((pod) => ({
      name: pod.metadata.name,
      uid: pod.metadata.uid ?? '',
      resourceVersion: pod.metadata.resourceVersion ?? '',
    })),
    move,
    outcome: { ...result, ...(ready ? { wakesDependents: true } : {}), ...wakes },
  };
}

/** A wait or idle step: the status, pruning, and a stale lease healed. */
export function planRest(base: Base, status: TargetStatus, result: StepOutcome): Planned {
  return finish(base, status, { kind: 'rest', healLease: true }, result, true);
}

/** The pods no bookkeeping will read again, once this step's marks and prunes are written. */
function podsReleasedBy(
  planning: Planning,
  records: readonly JobRecord[],
  pruning: readonly string[],
  ownerGone: boolean,
): string[] {
  const { snap, facts } = planning;
  const jobs = snap.jobs.flatMap((job) => {
    const uid = job.metadata.uid;
    if (uid === undefined) return [];
    const record = records.find((r) => r.name === job.metadata.name);
    return [
      {
        uid,
        bookkept: record?.bookkept ?? false,
        finished: record?.finished ?? false,
        deleting: job.metadata.deletionTimestamp !== undefined,
      },
    ];
  });
  return podsToRelease({ pods: facts.pods ?? [], jobs, pruning, ownerGone }).map(
    ({ pod }) => pod.metadata.name,
  );
}
