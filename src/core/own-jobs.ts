import { OPS } from '../schemas/result.ts';
import { jobNameStems } from './names.ts';
import type { ObjectKind } from './object-ref.ts';

/**
 * Whether a Job name is one of this object's own (DESIGN.md section 9: `captf-<c|m|mp>-<name>-<op>-a<n>-
 * <hash6>`, or with the hashed stem `captf-<c|m|mp>--<16 hex>` when that is too long). Both stems are
 * tried: whether a Job used the hashed one depends on its op and attempt (`a10` may not fit where `a1`
 * did). Exact by construction: object `web` does not claim the Jobs of `web-apply`, and no plain stem
 * equals a hashed one. Used before healing a lease held under a Job name the API server no longer shows
 * running.
 */
export function isOwnJobName(kind: ObjectKind, name: string, candidate: string): boolean {
  const { plain, hashed } = jobNameStems(kind, name);
  return [plain, hashed].some((stem) =>
    OPS.some(
      (op) =>
        candidate.startsWith(`${stem}-${op}-a`) &&
        /^\d+-[0-9a-f]{6}$/.test(candidate.slice(stem.length + op.length + 3)),
    ),
  );
}
