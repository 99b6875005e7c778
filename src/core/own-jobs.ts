import { OPS, type Op } from '../schemas/result.ts';
import { finishedCondition } from './job-conditions.ts';
import { LABELS } from './job-labels.ts';
import { jobNameStems } from './names.ts';
import type { ObjectKind } from './object-ref.ts';
import type { JobView } from './views.ts';

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

/** Who holds a Job name this object's next Job wants (DESIGN.md section 5 step 8). */
export type NameHolder =
  /** This object's Job of that op and attempt: the repeat of a crashed step adopts it (C02). */
  | 'ours'
  /** Another's Job that has not finished: the object waits for it to go (`WaitingForForeignJob`). */
  | 'foreign-running'
  /** Another's Job that has finished and can never change: the object moves on to the next attempt. */
  | 'foreign-finished';

/**
 * Tells who holds `job`, the Job found under the name of the run `wanted` describes. Ours only with this
 * object's UID in both the label and the owner reference, the run's op and attempt, and not being deleted;
 * anything else is foreign (a predecessor of the same name, deleted without its Jobs, or a person's Job).
 * Finished means what bookkeeping reads (a Complete or Failed condition, src/core/job-conditions.ts).
 */
export function nameHolderOf(job: JobView, wanted: { uid: string; op: Op; attempt: number }): NameHolder {
  const labels = job.metadata.labels ?? {};
  const ours =
    labels[LABELS.ownerUid] === wanted.uid &&
    labels[LABELS.op] === wanted.op &&
    labels[LABELS.attempt] === String(wanted.attempt) &&
    job.metadata.ownerReferences?.some((owner) => owner.uid === wanted.uid) === true &&
    job.metadata.deletionTimestamp === undefined;
  if (ours) return 'ours';
  return finishedCondition(job) === undefined ? 'foreign-running' : 'foreign-finished';
}
