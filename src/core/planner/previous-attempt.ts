import type { Op } from '../../schemas/result.ts';
import { waitStatus } from '../move-status.ts';
import { isPodAlive, mayHavePods } from '../pods.ts';
import type { Planned } from '../step-plan.ts';
import type { PodView } from '../views.ts';
import { waitFor } from '../wait-table.ts';
import { planRest } from './assemble.ts';
import { type Base, waitOutcome } from './context.ts';

/**
 * The API guard (DESIGN.md section 5 step 7): no pod of an earlier attempt may live, whichever Job it
 * belonged to, when a Job starts or when the state is read to decide a deleting object's row 1 (section 3):
 * a Job deleted before it finished (by a person, orphaned, at its deadline) leaves its pod running for its
 * grace period, still able to write the state, so neither a start nor the state proves anything until it is
 * gone. Pods are told apart by their Job's UID, never by a name; Redis is never the only guard.
 */

/** The `WaitingForPreviousAttempt` rest for the pods that still live; undefined when none does. */
export function previousAttemptWait(base: Base, op: Op, pods: readonly PodView[]): Planned | undefined {
  const { snap, facts } = base.planning;
  const alive = pods.filter((pod) => isPodAlive(pod));
  if (alive.length === 0) return undefined;
  const wait = waitFor('WaitingForPreviousAttempt', {
    now: facts.now,
    uid: snap.uid,
    op,
    message: `pod(s) of an earlier attempt still run: ${alive.map((pod) => pod.metadata.name).join(', ')}`,
  });
  return planRest(base, waitStatus(base.planning.statusContext, base.status, wait), waitOutcome(base, wait));
}

/**
 * What comes before row 1 reads a deleting object's state: the pods' read (when some may exist,
 * src/core/pods.ts `mayHavePods`), then the wait for any that lives. Undefined when the state may be read.
 */
export function beforeStateRead(base: Base): Planned | undefined {
  const { snap, facts } = base.planning;
  if (facts.pods === undefined && mayHavePods(snap)) return { kind: 'read', read: 'pods' };
  return previousAttemptWait(base, 'destroy', facts.pods ?? []);
}
