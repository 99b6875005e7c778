import { OPS } from '../schemas/result.ts';
import { jobName } from './names.ts';
import type { ObjectKind } from './object-ref.ts';

/**
 * Whether a Job name is one of this object's own (DESIGN.md section 9: `captf-<c|m|mp>-<name>-<op>-a<n>-
 * <hash6>`, the name hashed when too long). Exact by construction: object `web` does not claim the Jobs of
 * `web-apply`. Used before healing a lease held under a Job name the API server no longer shows running.
 */
export function isOwnJobName(kind: ObjectKind, name: string, candidate: string): boolean {
  return OPS.some((op) => {
    const sample = jobName({ kind, name, op, attempt: 1, inputsHash: '', tick: '' });
    const stem = sample.slice(0, sample.lastIndexOf(`-${op}-a1-`));
    if (!candidate.startsWith(`${stem}-${op}-a`)) return false;
    return /^\d+-[0-9a-f]{6}$/.test(candidate.slice(stem.length + op.length + 3));
  });
}
