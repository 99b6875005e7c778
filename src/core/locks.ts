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

/** The suffix the Job controller appends to a Job's name for its pods (`generateName`, 5 characters). */
const POD_SUFFIX = /^-[a-z0-9]{5}$/;

/**
 * Whether `host` is a pod of one of `ownJobNames` exactly: `<job name>-<5 characters>`. A prefix test would
 * take object `web`'s lock from a pod of `web-apply`, or of `web` in another namespace (DESIGN.md section 12:
 * a foreign holder is never unlocked). Job names are at most 57 characters, so the hostname is never cut.
 */
export function isOwnJobPod(host: string, ownJobNames: readonly string[]): boolean {
  return ownJobNames.some((job) => host.startsWith(job) && POD_SUFFIX.test(host.slice(job.length)));
}

/**
 * Judges a held lock. `ownJobNames` are the names of this object's Jobs (listed by its owner UID label);
 * `holderPod` is the holder pod read live (undefined when it is gone).
 */
export function judgeLock(
  lock: LockInfo,
  ownJobNames: readonly string[],
  holderPod: PodView | undefined,
): LockVerdict {
  const host = lockHolderHost(lock);
  if (host === undefined || !isOwnJobPod(host, ownJobNames))
    return { kind: 'foreign', reason: 'StateLocked', who: lock.who ?? '(unknown)' };
  const phase = holderPod?.status?.phase;
  const finished = holderPod === undefined || phase === 'Succeeded' || phase === 'Failed';
  if (finished) return { kind: 'stale', reason: 'ForceUnlocked', lockId: lock.id, holderPod: host };
  return { kind: 'live', reason: 'LockContended', holderPod: host };
}
