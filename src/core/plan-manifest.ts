import { API_VERSION, type TargetKind } from '../schemas/kinds/api-group.ts';
import type { TerraformPlanSpec } from '../schemas/kinds/terraform-plan.ts';
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

export function buildPlanManifest(input: {
  target: { apiVersion: string; kind: TargetKind; name: string; namespace: string; uid: string };
  job: string;
  inputsHash: string;
  plan: PlanSummary;
  labels: Record<string, string>;
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
      approved: false,
    },
  };
}
