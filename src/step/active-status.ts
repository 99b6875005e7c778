import { OP_CONDITION, readyUpdate, setCondition } from '../core/conditions.ts';
import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { Op } from '../schemas/result.ts';
import type { StepContext } from './context.ts';
import type { TargetStatus } from './snapshot.ts';

/**
 * The status of an object whose Job runs (DESIGN.md sections 2 and 6): `activeJob`, the op's condition
 * `Unknown` with the watch reason, `waitReason` `JobActive` or `ImagePullBackOff`, no `nextAttemptAt`.
 */
export function activeStatus(
  context: StepContext,
  status: TargetStatus,
  active: { name: string; op: Op; attempt: number; startedAt: string },
  reason: Extract<WaitReason, 'JobActive' | 'ImagePullBackOff'>,
  message: string,
): TargetStatus {
  const at = { now: context.now, generation: context.snap.generation };
  const deleting = context.snap.object.metadata.deletionTimestamp !== undefined;
  let conditions = setCondition(
    status.conditions ?? [],
    { type: OP_CONDITION[active.op], status: 'Unknown', reason, message },
    at,
  );
  conditions = setCondition(
    conditions,
    readyUpdate(conditions, { provisioned: status.ready === true, deleting }),
    at,
  );
  const next: TargetStatus = {
    ...status,
    activeJob: active,
    waitReason: reason,
    conditions,
    observedGeneration: context.snap.generation,
  };
  delete next.nextAttemptAt;
  return next;
}
