import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { type Classification, classifyJob } from '../core/classify.ts';
import type { JobRecord } from '../core/job-record.ts';
import { judgeLock, type LockVerdict, lockHolderHost } from '../core/locks.ts';
import { type LockInfo, parseRunnerResult } from '../schemas/result.ts';
import { podsOfJob } from './pods.ts';
import { RUN_DECISION_ANNOTATIONS } from './run-decisions.ts';

/**
 * State-lock evidence (DESIGN.md section 12) read live by the shell: whose lock a run reported, whether
 * that holder is one of this object's own Job pods and still alive, and which stale lock id the next Job
 * should force-unlock. The id goes to at most one Job: that Job carries it in an annotation (run-decisions.ts), and
 * an id found there is never passed again.
 */

/** The names of an object's own Jobs: a lock holder must be one of their pods exactly (section 12). */
function ownJobNames(jobs: readonly V1Job[]): string[] {
  return jobs.flatMap((job) => (job.metadata?.name ? [job.metadata.name] : []));
}

/** Judges a reported lock against this object's own Jobs and pods (read live). */
export function judgeReportedLock(
  lock: LockInfo,
  jobs: readonly V1Job[],
  pods: readonly V1Pod[],
): LockVerdict {
  const host = lockHolderHost(lock);
  const holder = pods.find((pod) => pod.metadata?.name === host);
  const holderView =
    holder && host !== undefined
      ? { metadata: { name: host }, status: { phase: holder.status?.phase ?? 'Unknown' } }
      : undefined;
  return judgeLock(lock, ownJobNames(jobs), holderView);
}

/**
 * Classifies a finished Job (src/core/classify.ts) with the lock evidence: a lock whose holder is alive
 * (or foreign) makes the run `lock-contended` rather than a counted failure.
 */
export function classifyWithLock(
  objectJobs: readonly V1Job[],
  input: Omit<Parameters<typeof classifyJob>[0], 'lockBlocksRun'>,
  objectPods: readonly V1Pod[],
): { classification: Classification; lock?: LockVerdict } {
  const first = classifyJob(input);
  const lock = first.runnerResult?.lock;
  if (!lock || first.evidence !== 'step-failed') return { classification: first };
  const verdict = judgeReportedLock(lock, objectJobs, objectPods);
  if (verdict.kind === 'stale') return { classification: first, lock: verdict };
  return { classification: classifyJob({ ...input, lockBlocksRun: true }), lock: verdict };
}

/**
 * The stale lock id the next Job should force-unlock: from the newest finished Job of the object whose
 * result reported a lock held by one of the object's own pods that is gone or finished now; undefined when
 * there is none, or when a Job already carried that id (a stale id is never retried).
 */
export function staleLockToUnlock(
  jobs: readonly V1Job[],
  records: readonly JobRecord[],
  pods: readonly V1Pod[],
): string | undefined {
  const newest = [...records]
    .filter((r) => r.finished)
    .sort((a, b) => (b.finishedAtMs ?? 0) - (a.finishedAtMs ?? 0) || b.createdAtMs - a.createdAtMs)[0];
  if (!newest) return undefined;
  const job = jobs.find((j) => j.metadata?.name === newest.name);
  if (!job) return undefined;
  for (const pod of podsOfJob(job, pods)) {
    const source = pod.status?.containerStatuses?.find((c) => c.name === 'source');
    const parsed = parseRunnerResult(source?.state?.terminated?.message);
    const lock = parsed.ok ? parsed.result.lock : undefined;
    if (!lock) continue;
    const verdict = judgeReportedLock(lock, jobs, pods);
    if (verdict.kind !== 'stale') return undefined;
    const used = jobs.some(
      (j) => j.metadata?.annotations?.[RUN_DECISION_ANNOTATIONS.forceUnlockId] === verdict.lockId,
    );
    return used ? undefined : verdict.lockId;
  }
  return undefined;
}
