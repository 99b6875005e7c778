import { isKubeError } from '../adapters/kube/errors.ts';
import type { StepContext } from './context.ts';
import { mergePatchOf } from './merge-patch.ts';
import { redactDeep } from './redact.ts';
import type { TargetStatus } from './snapshot.ts';

/**
 * The status write of a step (DESIGN.md section 5): one merge patch of the status subresource carrying only
 * what changed, under the resourceVersion the step holds, so a concurrent writer turns it into a Conflict
 * instead of being overwritten. A Conflict loses nothing: everything the step would have recorded is read
 * again from the Jobs on the next step.
 */

export type StatusWrite = { kind: 'written' } | { kind: 'unchanged' } | { kind: 'conflict'; message: string };

/**
 * Writes `next` over the context's current status when they differ, and moves the context's status and
 * resourceVersion on. Throws a KubeError for anything but a Conflict.
 */
export async function commitStatus(context: StepContext, next: TargetStatus): Promise<StatusWrite> {
  const { snap, deps } = context;
  // C15: whatever a runner reported, no referenced Secret value reaches the status.
  const withGeneration: TargetStatus = redactDeep(
    { ...next, observedGeneration: snap.generation },
    context.redact,
  );
  const patch = mergePatchOf(
    context.status as Record<string, unknown>,
    withGeneration as Record<string, unknown>,
  );
  if (patch === undefined) return { kind: 'unchanged' };
  try {
    const object = await deps.kube.writer.patchStatus(
      snap.ref.kind,
      { namespace: snap.ref.namespace, name: snap.ref.name, resourceVersion: context.resourceVersion },
      patch,
    );
    context.resourceVersion = object.metadata.resourceVersion;
    context.status = withGeneration;
    context.draft = withGeneration;
    return { kind: 'written' };
  } catch (error) {
    if (isKubeError(error, 'Conflict')) return { kind: 'conflict', message: error.message };
    throw error;
  }
}
