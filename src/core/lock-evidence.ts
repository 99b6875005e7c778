import { type Classification, type ClassifyInput, classifyJob } from './classify.ts';
import type { JobRecord } from './job-record.ts';
import { judgeLock, type LockVerdict, lockHolderHost } from './locks.ts';
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

/** Judges a reported lock against this object's own Jobs and pods. */
export function judgeReportedLock(
  lock: LockInfo,
  jobs: readonly JobView[],
  pods: readonly PodView[],
): LockVerdict {
  const host = lockHolderHost(lock);
  const holder = pods.find((pod) => pod.metadata.name === host);
  const holderView =
    holder && host !== undefined
      ? { metadata: { name: host }, status: { phase: holder.status?.phase ?? 'Unknown' } }
      : undefined;
  return judgeLock(lock, ownJobNames(jobs), holderView);
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
  if (verdict.kind !== 'live') return { ...first, lock: verdict };
  return { ...classifyJob({ ...input, lockBlocksRun: true }), lock: verdict };
}

/**
 * The stale lock id the next Job should force-unlock: from the newest finished Job of the object, when the
 * pod that decided its run (the winner of C01) failed on a lock held by one of the object's own pods that is
 * gone or finished now; undefined otherwise, or when a Job already carried that id (never retried). A lock
 * reported by a losing duplicate pod is not the run's evidence and is never unlocked (issue 10, class 8).
 */
export function staleLockToUnlock(
  jobs: readonly JobView[],
  records: readonly JobRecord[],
  pods: readonly PodView[],
  now: Date,
): string | undefined {
  const newest = [...records]
    .filter((r) => r.finished)
    .sort((a, b) => (b.finishedAtMs ?? 0) - (a.finishedAtMs ?? 0) || b.createdAtMs - a.createdAtMs)[0];
  const job = newest && jobs.find((j) => j.metadata.name === newest.name);
  if (!newest || !job) return undefined;
  const run = classifyJob({ op: newest.op, job, pods: podsOfJob(job, pods), now });
  const lock = run.runnerResult?.lock;
  if (run.evidence !== 'step-failed' || !lock) return undefined;
  const verdict = judgeReportedLock(lock, jobs, pods);
  if (verdict.kind !== 'stale') return undefined;
  const used = jobs.some(
    (j) => j.metadata.annotations?.[RUN_DECISION_ANNOTATIONS.forceUnlockId] === verdict.lockId,
  );
  return used ? undefined : verdict.lockId;
}
