import type { LockInfo } from '../schemas/result.ts';
import type { PodView } from './views.ts';

/**
 * State locks (DESIGN.md section 12): a lock is stale only if its holder is one of this object's own Job
 * pods and that pod, read live, is gone or finished. The controller never unlocks itself; it passes the id
 * to the next Job (`force-unlock <id>`). A foreign holder is never unlocked.
 */

/** The verdict on a lock a run reported as held. */
export type LockVerdict =
  | { kind: 'stale'; reason: 'ForceUnlocked'; lockId: string; holderPod: string }
  | { kind: 'live'; reason: 'LockContended'; holderPod: string }
  | { kind: 'foreign'; reason: 'StateLocked'; who: string };

/** Terraform's `Who` is `user@host`; for our Jobs the host is the pod name. */
export function lockHolderHost(lock: LockInfo): string | undefined {
  const who = lock.who;
  if (!who) return undefined;
  const at = who.lastIndexOf('@');
  return at === -1 ? who : who.slice(at + 1);
}

/** Pod names of this object's Jobs: `<job name>-<5 random>`, the job name starting with one of `jobPrefixes`. */
export function isOwnJobPod(host: string, jobPrefixes: readonly string[]): boolean {
  return (
    jobPrefixes.some((prefix) => host.startsWith(prefix)) && /-a[0-9]+-[0-9a-f]{6}-[a-z0-9]{5}$/.test(host)
  );
}

/**
 * Judges a held lock. `jobPrefixes` are this object's Job name prefixes (`jobNamePrefixes` in names.ts);
 * `holderPod` is the holder pod read live (undefined when it is gone).
 */
export function judgeLock(
  lock: LockInfo,
  jobPrefixes: readonly string[],
  holderPod: PodView | undefined,
): LockVerdict {
  const host = lockHolderHost(lock);
  if (host === undefined || !isOwnJobPod(host, jobPrefixes))
    return { kind: 'foreign', reason: 'StateLocked', who: lock.who ?? '(unknown)' };
  const phase = holderPod?.status?.phase;
  const finished = holderPod === undefined || phase === 'Succeeded' || phase === 'Failed';
  if (finished) return { kind: 'stale', reason: 'ForceUnlocked', lockId: lock.id, holderPod: host };
  return { kind: 'live', reason: 'LockContended', holderPod: host };
}
