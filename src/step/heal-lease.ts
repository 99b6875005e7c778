import type { JobRecord } from '../core/job-record.ts';
import type { StepContext } from './context.ts';
import { isOwnJobName } from './own-jobs.ts';

/**
 * Heals a run lease whose release was lost (a crash or a Redis outage after bookkeeping, DESIGN.md section
 * 1: "Redis holds nothing that cannot be rebuilt from the API server"). A step with nothing running reads
 * the object's run lease; held under the name of a Job that is not running, it is released by its own
 * token (never someone else's, C17), and that Job's slots with it. Costs one Redis read when clean.
 */
export async function healStaleLease(context: StepContext, records: readonly JobRecord[]): Promise<void> {
  const { deps, snap } = context;
  const scope = {
    object: snap.ref,
    ...(snap.clusterName !== undefined ? { clusterName: snap.clusterName } : {}),
  };
  const current = await deps.redis.runLeases.read(scope);
  if (current.kind !== 'held') return;
  const holder = current.token.holder;
  if (records.some((record) => record.name === holder && !record.finished)) return;
  if (!isOwnJobName(snap.ref.kind, snap.ref.name, holder)) return;
  const released = await deps.redis.runLeases.release(scope, current.token);
  if (released.kind === 'released') {
    await deps.redis.jobSlots.release({
      namespace: snap.ref.namespace,
      job: holder,
      ...(snap.clusterName !== undefined ? { clusterName: snap.clusterName } : {}),
    });
    deps.failpoints.hit('after-lease-release');
  }
}
