import { z } from 'zod';
import { PlanChangesSchema } from '../plan-changes.ts';
import { API_VERSION, TARGET_KINDS } from './api-group.ts';
import { ConditionsSchema } from './condition.ts';
import type { KindDefinition } from './kind-definition.ts';
import { ObjectMetaSchema } from './object-meta.ts';
import {
  approvalIrreversible,
  approvedByWhenApproved,
  approveOnlyPending,
  approverFixed,
  planBindingFixed,
  planChangesFixed,
  withRules,
} from './rules.ts';

/**
 * A plan that waits for approval (DESIGN.md section 11). The controller writes it when an apply is
 * blocked; a person sets `spec.approved: true` and `spec.approvedBy`.
 */

export const PLAN_PHASES = ['Pending', 'Approved', 'Applied', 'Superseded', 'Failed'] as const;
export const PlanPhaseSchema = z.enum(PLAN_PHASES);
export type PlanPhase = z.infer<typeof PlanPhaseSchema>;

export const TerraformPlanSpecSchema = withRules(
  z
    .object({
      targetRef: z
        .object({
          kind: z.enum(TARGET_KINDS),
          name: z.string().min(1).max(253),
          uid: z.string().min(1).max(64),
        })
        .describe('The object whose apply waits.'),
      inputsHash: z.string().min(1).max(128).describe('Inputs hash of the blocked apply.'),
      digest: z.string().min(1).max(128).describe('Plan digest: the approval binds to exactly this plan.'),
      add: z.number().int().min(0),
      change: z.number().int().min(0),
      destroy: z.number().int().min(0),
      destructive: z.boolean().default(false).describe('The plan deletes or replaces a resource.'),
      job: z.string().max(63).describe('The Job that made the plan.'),
      changes: PlanChangesSchema.optional().describe(
        'The readable plan (DESIGN.md section 11): resource addresses with their action and the attribute paths that change, output changes, exact counts. Paths only, never values. Absent when the Job log that carries it could not be read; the digest and counts still bind the plan.',
      ),
      requestedBy: z
        .object({
          manager: z
            .string()
            .max(128)
            .optional()
            .describe(
              "The field manager that last changed the target's spec (metadata.managedFields: kubectl-edit, kubectl-client-side-apply, a controller's name); Kubernetes keeps no user name on an object, its audit log does.",
            ),
          time: z.string().max(64).optional().describe('When that manager last changed the spec.'),
          generation: z.number().int().min(0).describe('The target generation the plan was made for.'),
        })
        .optional()
        .describe('Who asked for the change that waits: what a notifier names.'),
      approved: withRules(z.boolean().default(false), [approvalIrreversible]).describe(
        'Set to true to approve; cannot be withdrawn.',
      ),
      approvedBy: z
        .string()
        .max(253)
        .optional()
        .describe('Your own user name; an admission policy checks it.'),
    })
    .describe('The plan and its approval.'),
  [approvedByWhenApproved, approverFixed, planBindingFixed, planChangesFixed],
);
export type TerraformPlanSpec = z.infer<typeof TerraformPlanSpecSchema>;

export const TerraformPlanStatusSchema = z
  .object({
    phase: PlanPhaseSchema.optional(),
    conditions: ConditionsSchema.optional(),
    appliedBy: z.string().max(63).optional().describe('The Job that applied the plan.'),
    message: z.string().max(1024).optional(),
  })
  .describe('Where the plan is in its life.');
export type TerraformPlanStatus = z.infer<typeof TerraformPlanStatusSchema>;

export const TerraformPlanSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('TerraformPlan'),
  metadata: ObjectMetaSchema,
  spec: TerraformPlanSpecSchema,
  status: TerraformPlanStatusSchema.optional(),
});
export type TerraformPlan = z.infer<typeof TerraformPlanSchema>;

export const terraformPlanKind: KindDefinition = {
  kind: 'TerraformPlan',
  plural: 'terraformplans',
  singular: 'terraformplan',
  shortNames: ['tfplan'],
  description:
    'A Terraform plan that waits for approval before a TerraformCluster, Machine or MachinePool applies it.',
  spec: TerraformPlanSpecSchema,
  status: TerraformPlanStatusSchema,
  rootRules: [approveOnlyPending],
  printerColumns: [
    { name: 'Target', type: 'string', jsonPath: '.spec.targetRef.name' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Add', type: 'integer', jsonPath: '.spec.add' },
    { name: 'Change', type: 'integer', jsonPath: '.spec.change' },
    { name: 'Destroy', type: 'integer', jsonPath: '.spec.destroy' },
    { name: 'Approved', type: 'boolean', jsonPath: '.spec.approved' },
    {
      name: 'Destructive',
      type: 'string',
      jsonPath: '.spec.changes.destructive',
      description: 'Addresses the plan deletes or replaces (the first 20).',
      priority: 1,
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};
