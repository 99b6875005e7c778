import { type Classification, type ClassifyInput, classifyJob } from './classify.ts';
import type { JobRecord } from './job-record.ts';
import { judgeLock, type LockVerdict, lockHolderHost } from './locks.ts';
import type { ObjectKind } from './object-ref.ts';
import { isOwnJobName } from './own-jobs.ts';
import { podsOfJob } from './pods.ts';
import { RUN_DECISION_ANNOTATIONS } from './run-decisions.ts';
import type { JobView, PodView } from './views.ts';

/**
 * State-lock evidence (DESIGN.md sections 4 and 12), judged against the object's own Jobs and pods as read
 * live: whose lock a run reported, whether that holder is one of this object's own Job pods and still
 * alive, and which stale lock id the next Job should force-unlock. The id goes to at most one Job: that Job
 * carries it in an annotation (src/core/run-decisions.ts), and an id found there is never passed again.
 */

type LockInfo = NonNullable<NonNullable<Classification['runnerResult']>['lock']>;

/** The names of an object's own Jobs: a lock holder must be one of their pods exactly (section 12). */
function ownJobNames(jobs: readonly JobView[]): string[] {
  return jobs.map((job) => job.metadata.name).filter((name) => name !== '');
}

/** The object whose Job names a holder may carry, and the holder pod read live by name, once read. */
export interface LockOwner {
  kind: ObjectKind;
  name: string;
  /** The holder pod read by name (issue 23 item 8); `pod` undefined when it is gone. */
  holderRead?: { name: string; pod: PodView | undefined };
}

/** A holder the verdict needs read live first: a pod named like this object's Jobs, of none it lists. */
export type LockJudgement = LockVerdict | { kind: 'read'; holderPod: string };

/** The Job a holder pod belongs to (`<job>-<5 characters>`), by name only. */
export function holderJobName(host: string): string | undefined {
  return /-[a-z0-9]{5}$/.test(host) ? host.slice(0, -6) : undefined;
}

/**
 * Judges a reported lock against this object's own Jobs and pods. A holder named like one of the object's
 * Jobs (DESIGN.md section 9) that it no longer lists — pruned, or deleted by the deadline enforcement with
 * its pod — is still this object's own naming (section 12): judged by its pod read live by name (gone or
 * finished: stale; alive: not one of ours, so foreign). Before that read the answer is `read`.
 */
export function judgeReportedLock(
  lock: LockInfo,
  jobs: readonly JobView[],
  pods: readonly PodView[],
  owner?: LockOwner,
): LockJudgement {
  const host = lockHolderHost(lock);
  const holder = pods.find((pod) => pod.metadata.name === host);
  const view = (pod: PodView | undefined) =>
    pod && host !== undefined
      ? { metadata: { name: host }, status: { phase: pod.status?.phase ?? 'Unknown' } }
      : undefined;
  const listed = judgeLock(lock, ownJobNames(jobs), view(holder));
  if (listed.kind !== 'foreign' || host === undefined || owner === undefined) return listed;
  const job = holderJobName(host);
  if (job === undefined || !isOwnJobName(owner.kind, owner.name, job)) return listed;
  // Among the object's pods (its owner label): one of its own, whatever became of its Job.
  if (holder) return judgeLock(lock, [job], view(holder));
  if (owner.holderRead?.name !== host) return { kind: 'read', holderPod: host };
  const read = owner.holderRead.pod;
  const phase = read?.status?.phase;
  if (read !== undefined && phase !== 'Succeeded' && phase !== 'Failed') return listed;
  return judgeLock(lock, [job], undefined);
}

/**
 * Classifies a finished Job (src/core/classify.ts) with the lock evidence. Only a lock held by another live
 * pod of this object makes the run `lock-contended` (uncounted, with its own cap, section 4); a foreign
 * holder leaves it a counted step failure (the Job waited out `lockTimeoutSeconds`, section 12), and a stale
 * holder a counted failure whose lock the next Job unlocks. `lock` carries the verdict for the Events.
 */
export function classifyWithLock(
  objectJobs: readonly JobView[],
  input: Omit<ClassifyInput, 'lockBlocksRun'>,
  objectPods: readonly PodView[],
): Classification & { lock?: LockVerdict } {
  const first = classifyJob(input);
  const lock = first.runnerResult?.lock;
  if (!lock || first.evidence !== 'step-failed') return first;
  const verdict = judgeReportedLock(lock, objectJobs, objectPods);
  if (verdict.kind === 'read') return first;
  if (verdict.kind !== 'live') return { ...first, lock: verdict };
  return { ...classifyJob({ ...input, lockBlocksRun: true }), lock: verdict };
}

/** The lock the newest finished run of the object reported, as the pod that decided the run saw it. */
function newestReportedLock(
  jobs: readonly JobView[],
  records: readonly JobRecord[],
  pods: readonly PodView[],
  now: Date,
): LockInfo | undefined {
  const newest = [...records]
    .filter((r) => r.finished)
    .sort((a, b) => (b.finishedAtMs ?? 0) - (a.finishedAtMs ?? 0) || b.createdAtMs - a.createdAtMs)[0];
  const job = newest && jobs.find((j) => j.metadata.name === newest.name);
  if (!newest || !job) return undefined;
  const run = classifyJob({ op: newest.op, job, pods: podsOfJob(job, pods), now });
  const lock = run.runnerResult?.lock;
  return run.evidence === 'step-failed' ? lock : undefined;
}

/**
 * The Job whose pod holds the lock the newest finished run reported (issue 23 item 8): pruning keeps it, so
 * the stale-lock rules still find the holder among the object's Jobs until a later run got through.
 */
export function lockHoldingJob(
  jobs: readonly JobView[],
  records: readonly JobRecord[],
  pods: readonly PodView[],
  now: Date,
): string | undefined {
  const lock = newestReportedLock(jobs, records, pods, now);
  const host = lock ? lockHolderHost(lock) : undefined;
  return host === undefined ? undefined : holderJobName(host);
}

/**
 * The stale lock id the next Job should force-unlock: from the newest finished Job of the object, when the
 * pod that decided its run (the winner of C01) failed on a lock held by one of the object's own pods that is
 * gone or finished now; undefined otherwise, or when a Job already carried that id (never retried). A lock
 * reported by a losing duplicate pod is not the run's evidence and is never unlocked (issue 10, class 8).
 * A holder named like the object's Jobs whose Job is gone (pruned, deleted past its deadline) is judged by
 * its pod read live: `read` asks for that read first.
 */
export function staleLockToUnlock(
  jobs: readonly JobView[],
  records: readonly JobRecord[],
  pods: readonly PodView[],
  now: Date,
  owner?: LockOwner,
): string | undefined | { read: string } {
  const lock = newestReportedLock(jobs, records, pods, now);
  if (!lock) return undefined;
  const verdict = judgeReportedLock(lock, jobs, pods, owner);
  if (verdict.kind === 'read') return { read: verdict.holderPod };
  if (verdict.kind !== 'stale') return undefined;
  const used = jobs.some(
    (j) => j.metadata.annotations?.[RUN_DECISION_ANNOTATIONS.forceUnlockId] === verdict.lockId,
  );
  return used ? undefined : verdict.lockId;
}
