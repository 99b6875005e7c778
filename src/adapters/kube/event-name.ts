import { createHash } from 'node:crypto';

/**
 * Deterministic names for Events (DESIGN.md section 7: "events fire once per transition"). The same
 * (object, reason, transition) always gets the same name, so a repeated step's create answers
 * AlreadyExists instead of adding a duplicate.
 */

/** Longest object-name prefix kept, so prefix + "." + 16 hex stays far below the 253-character limit. */
const NAME_PREFIX_MAX = 200;

/**
 * `<object name>.<16 hex of SHA-256(uid, reason, transitionKey)>`. `transitionKey` names the transition,
 * e.g. the Job name for `JobSucceeded`, or `<generation>` for `DriftDetected`.
 */
export function eventNameOf(
  regarding: { name: string; uid: string },
  reason: string,
  transitionKey: string,
): string {
  const digest = createHash('sha256').update(`${regarding.uid}\n${reason}\n${transitionKey}`).digest('hex');
  return `${regarding.name.slice(0, NAME_PREFIX_MAX)}.${digest.slice(0, 16)}`;
}
