import { API_VERSION, type TargetKind } from '../schemas/kinds/api-group.ts';
import type { TerraformPlanSpec } from '../schemas/kinds/terraform-plan.ts';
import type { PlanChanges } from '../schemas/plan-changes.ts';
import type { PlanSummary } from '../schemas/result.ts';
import { type OwnerReference, ownerReference } from './job-manifest.ts';

/**
 * The TerraformPlan a blocked apply creates (DESIGN.md section 11): one live plan per target, named after
 * the Job that made it, so a retried bookkeeping finds the plan it created.
 */

/** A TerraformPlan as we create it (status is written afterwards through the status subresource). */
export interface PlanManifest {
  apiVersion: typeof API_VERSION;
  kind: 'TerraformPlan';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    ownerReferences: OwnerReference[];
  };
  spec: TerraformPlanSpec;
}

/** `<job>-plan`: 57 + 5 characters, within the 253 of an object name. */
export function planName(job: string): string {
  return `${job}-plan`;
}

/** Who asked for the change a plan waits with (`spec.requestedBy`). */
export type PlanRequester = NonNullable<TerraformPlanSpec['requestedBy']>;

/** The controller's own field manager (src/adapters/kube/writer.ts): its spec writes are contract fields. */
const CONTROLLER_FIELD_MANAGER = 'captf';

/**
 * Who last changed a target's spec, from its `metadata.managedFields` (any shape: it is read unchecked):
 * the newest entry that owns a field under `spec`, is not a status write and is not the controller's own
 * (its contract-field patches are outputs, not requests). Kubernetes records the client's field manager,
 * never the user: the audit log names the user.
 */
export function planRequester(managedFields: unknown, generation: number): PlanRequester {
  const requester: PlanRequester = { generation };
  if (!Array.isArray(managedFields)) return requester;
  let newest: { manager: string; time: string } | undefined;
  for (const entry of managedFields as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { manager, time, subresource, fieldsV1 } = entry as Record<string, unknown>;
    if (typeof manager !== 'string' || manager === CONTROLLER_FIELD_MANAGER) continue;
    if (subresource !== undefined && subresource !== '') continue;
    if (typeof fieldsV1 !== 'object' || fieldsV1 === null || !('f:spec' in fieldsV1)) continue;
    const at = typeof time === 'string' ? time : '';
    if (newest === undefined || at >= newest.time) newest = { manager, time: at };
  }
  if (newest !== undefined) {
    requester.manager = newest.manager.slice(0, 128);
    if (newest.time !== '') requester.time = newest.time;
  }
  return requester;
}

export function buildPlanManifest(input: {
  target: { apiVersion: string; kind: TargetKind; name: string; namespace: string; uid: string };
  job: string;
  inputsHash: string;
  plan: PlanSummary;
  labels: Record<string, string>;
  /** The readable plan from the Job's log; absent when it could not be read. */
  changes?: PlanChanges;
  requestedBy?: PlanRequester;
}): PlanManifest {
  return {
    apiVersion: API_VERSION,
    kind: 'TerraformPlan',
    metadata: {
      name: planName(input.job),
      namespace: input.target.namespace,
      labels: input.labels,
      // Owned by the target: deleting the object deletes its plans; never by the Job, which is pruned.
      ownerReferences: [ownerReference(input.target)],
    },
    spec: {
      targetRef: { kind: input.target.kind, name: input.target.name, uid: input.target.uid },
      inputsHash: input.inputsHash,
      digest: input.plan.digest,
      add: input.plan.add,
      change: input.plan.change,
      destroy: input.plan.destroy,
      destructive: input.plan.destructive ?? false,
      job: input.job,
      ...(input.changes ? { changes: input.changes } : {}),
      ...(input.requestedBy ? { requestedBy: input.requestedBy } : {}),
      approved: false,
    },
  };
}
