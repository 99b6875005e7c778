import type { LockInfo } from '../schemas/result.ts';
import type { Diagnostic } from './machine-ui.ts';

/**
 * The held lock named by a failed locking step (DESIGN.md section 12). Terraform and OpenTofu both print
 * the lock as an indented block in the diagnostic detail:
 *   Lock Info:
 *     ID:        e508fa3b-…
 *     Who:       root@captf-m-…-apply-a1-3f2a9c
 * The controller judges staleness from `who` (the holder's host is a Job pod name), so both are kept.
 */

const LOCK_SUMMARY = /acquiring the state lock/i;
const ID_LINE = /^\s*ID:\s*(\S+)\s*$/m;
const WHO_LINE = /^\s*Who:\s*(\S.*?)\s*$/m;
/** Cap on the copied fields: they come from the lock holder, and the result has a byte budget. */
const FIELD_MAX_CHARS = 256;

/** The lock info of the first lock-acquisition error among the diagnostics; undefined when there is none. */
export function lockInfoFrom(diagnostics: readonly Diagnostic[]): LockInfo | undefined {
  for (const diagnostic of diagnostics) {
    if (diagnostic.severity !== 'error' || !LOCK_SUMMARY.test(diagnostic.summary)) continue;
    const id = ID_LINE.exec(diagnostic.detail)?.[1];
    if (id === undefined) continue;
    const who = WHO_LINE.exec(diagnostic.detail)?.[1];
    const info: LockInfo = { id: id.slice(0, FIELD_MAX_CHARS) };
    if (who !== undefined) info.who = who.slice(0, FIELD_MAX_CHARS);
    return info;
  }
  return undefined;
}
