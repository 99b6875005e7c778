import { judgeLock } from './locks.ts';
import type { PodView } from './views.ts';

/**
 * `kubectl captf unlock`: the manual unlock of docs/runbooks/stale-state-lock.md with its checks, as one
 * pure decision. The runbook's rules: a lock of this object's own Job pods is the controller's to unlock
 * (the next Job runs `force-unlock`; DESIGN.md section 12), a live holder is never unlocked, nothing is
 * unlocked while a Job of the object runs, and a foreign holder is unlocked only by a person who made sure
 * it is gone, naming the lock id they checked (the patch then tests that id, so a lock that changed hands
 * meanwhile stays).
 */

/** The annotation of the kubernetes backend's lock Lease that holds the lock's JSON. */
export const LOCK_INFO_ANNOTATION = 'app.terraform.io/lock-info';

/** The backend's lock as its Lease shows it. */
export interface LeaseLock {
  /** `spec.holderIdentity`: the lock id; absent when the state is not locked. */
  holderIdentity?: string | null;
  /** The `app.terraform.io/lock-info` annotation (JSON with ID, Operation, Who, Created). */
  lockInfo?: string;
}

/** What the check reads. */
export interface UnlockFacts {
  /** The lock Lease's name, or undefined when the object's backend is not the default one. */
  leaseName: string | undefined;
  /** The Lease, undefined when it does not exist. */
  lease: LeaseLock | undefined;
  /** `status.activeJob.name` of the object. */
  activeJob?: string;
  /** The names of the object's Jobs (label `captf.io/owner-uid`). */
  ownJobNames: readonly string[];
  /** The object's pods (same label). */
  pods: readonly PodView[];
  /** The holder pod, read by name in the object's namespace (undefined when it does not exist). */
  holderPod: PodView | undefined;
  /** The lock id the caller names (`--lock-id`). */
  lockId?: string;
}

/** The parsed lock info; fields absent when the annotation is missing or unreadable. */
export interface LockDetails {
  id: string;
  who?: string;
  operation?: string;
  created?: string;
}

/** The decision: unlock that id, nothing to do, or refuse (with the runbook's reason). */
export type UnlockDecision =
  | { kind: 'unlock'; leaseName: string; lock: LockDetails }
  | { kind: 'nothing'; message: string }
  | { kind: 'refuse'; message: string };

/** Reads the Lease's lock (its id from `holderIdentity`, the rest from the annotation). */
export function lockDetailsOf(lease: LeaseLock): LockDetails | undefined {
  const id = lease.holderIdentity ?? undefined;
  if (!id) return undefined;
  let info: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(lease.lockInfo ?? '{}');
    if (parsed !== null && typeof parsed === 'object') info = parsed as Record<string, unknown>;
  } catch {
    // An unreadable annotation leaves the id alone, which is all the unlock tests.
  }
  const text = (key: string) => (typeof info[key] === 'string' ? (info[key] as string) : undefined);
  const who = text('Who');
  const operation = text('Operation');
  const created = text('Created');
  return {
    id,
    ...(who === undefined ? {} : { who }),
    ...(operation === undefined ? {} : { operation }),
    ...(created === undefined ? {} : { created }),
  };
}

/** One line naming a lock. */
export function describeLock(lock: LockDetails): string {
  return `lock ${lock.id} (${lock.operation ?? 'operation unknown'} by ${lock.who ?? 'unknown holder'}${lock.created ? ` since ${lock.created}` : ''})`;
}

function running(pod: PodView | undefined): boolean {
  const phase = pod?.status?.phase;
  return pod !== undefined && phase !== 'Succeeded' && phase !== 'Failed';
}

/** Decides the unlock (pure). */
export function decideUnlock(facts: UnlockFacts): UnlockDecision {
  if (facts.leaseName === undefined)
    return {
      kind: 'refuse',
      message:
        'the object names its own backend (spec.backend): its lock is not a Lease of the default backend; unlock it with tofu force-unlock where the backend lives',
    };
  const lock = facts.lease === undefined ? undefined : lockDetailsOf(facts.lease);
  if (lock === undefined)
    return { kind: 'nothing', message: `the state is not locked (Lease ${facts.leaseName})` };
  const named = describeLock(lock);
  if (facts.activeJob)
    return {
      kind: 'refuse',
      message: `${named}: Job ${facts.activeJob} of this object runs; wait for it to finish`,
    };
  const livePod = facts.pods.find((pod) => running(pod));
  if (livePod)
    return { kind: 'refuse', message: `${named}: pod ${livePod.metadata.name} of this object still runs` };
  const verdict = judgeLock(
    { id: lock.id, ...(lock.who ? { who: lock.who } : {}) },
    facts.ownJobNames,
    facts.holderPod,
  );
  if (verdict.kind === 'live')
    return {
      kind: 'refuse',
      message: `${named}: the holder pod ${verdict.holderPod} still runs; never unlock a live holder`,
    };
  if (verdict.kind === 'stale')
    return {
      kind: 'nothing',
      message: `${named}: held by this object's finished pod ${verdict.holderPod}; the next Job force-unlocks it itself (Event ForceUnlocked)`,
    };
  if (running(facts.holderPod))
    return {
      kind: 'refuse',
      message: `${named}: the holder's pod ${facts.holderPod?.metadata.name ?? ''} exists and runs in this namespace`,
    };
  if (facts.lockId === undefined)
    return {
      kind: 'refuse',
      message: `${named}: a foreign holder. Unlocking while it still runs lets two writers change the state. Once you made sure it is gone (its process stopped, its pipeline cancelled), run again with --lock-id ${lock.id}`,
    };
  if (facts.lockId !== lock.id)
    return {
      kind: 'refuse',
      message: `${named}: not the lock you named (${facts.lockId}); it changed hands`,
    };
  return { kind: 'unlock', leaseName: facts.leaseName, lock };
}

/**
 * The JSON patch that clears the lock the way the backend's own unlock does (the runbook's patch): the
 * holder and the lock info go, the Lease stays, and the `test` fails the patch if the lock changed hands.
 */
export function unlockPatch(lockId: string, hasLockInfo: boolean): object[] {
  return [
    { op: 'test', path: '/spec/holderIdentity', value: lockId },
    { op: 'remove', path: '/spec/holderIdentity' },
    ...(hasLockInfo ? [{ op: 'remove', path: '/metadata/annotations/app.terraform.io~1lock-info' }] : []),
  ];
}
