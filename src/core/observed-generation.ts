import type { TargetStatus } from '../schemas/kinds/target.ts';

/**
 * `observedGeneration`: which generation of the object's spec a status (and each of its conditions) was
 * planned from (Kubernetes API conventions; DESIGN.md section 8).
 */

/** `status` stamped with the generation it was planned from (undefined stays undefined). */
export function withGeneration(
  status: TargetStatus | undefined,
  generation: number,
): TargetStatus | undefined {
  return status === undefined ? undefined : { ...status, observedGeneration: generation };
}

/**
 * A status planned at generation `planned`, written after the step's own spec write (the Cluster API
 * contract fields) moved the object to `written`: the generation and every condition observed at `planned`
 * (set by this step or carried from an earlier one) are observed at `written`. True because the spec write
 * went under the resourceVersion the step planned from, so the spec at `written` is the one planned from
 * plus the fields the step itself derived from it, and those fields are outputs: no run input
 * (src/core/inputs-hash.ts) and no condition is computed from them. Recording `planned` would leave
 * `observedGeneration` one behind until another step (a GitOps health check reads that as still
 * progressing). Entries observed at another generation are left as they are.
 */
export function observedAfterSpecWrite(status: TargetStatus, planned: number, written: number): TargetStatus {
  if (planned === written) return status;
  const at = (generation: number | undefined) => (generation === planned ? written : generation);
  return {
    ...status,
    ...(status.observedGeneration !== undefined ? { observedGeneration: at(status.observedGeneration) } : {}),
    ...(status.conditions !== undefined
      ? {
          conditions: status.conditions.map((c) =>
            c.observedGeneration === planned ? { ...c, observedGeneration: written } : c,
          ),
        }
      : {}),
  };
}
