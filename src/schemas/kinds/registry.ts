import type { z } from 'zod';
import { API_GROUP, API_VERSION, API_VERSION_NAME, type TargetKind } from './api-group.ts';
import type { KindDefinition } from './kind-definition.ts';
import type { TargetSpec, TargetStatus } from './target.ts';
import {
  terraformClusterTemplateKind,
  terraformMachinePoolTemplateKind,
  terraformMachineTemplateKind,
} from './templates.ts';
import {
  TerraformClusterSpecSchema,
  TerraformClusterStatusSchema,
  terraformClusterKind,
} from './terraform-cluster.ts';
import {
  TerraformMachineSpecSchema,
  TerraformMachineStatusSchema,
  terraformMachineKind,
} from './terraform-machine.ts';
import {
  TerraformMachinePoolSpecSchema,
  TerraformMachinePoolStatusSchema,
  terraformMachinePoolKind,
} from './terraform-machine-pool.ts';
import { terraformPlanKind } from './terraform-plan.ts';
import { terraformRunPolicyKind } from './terraform-run-policy.ts';

/**
 * The one registry of our kinds (DESIGN.md section 2): group, version, plural and schemas of each, read by
 * the CRD generator, the Kubernetes adapter, the relay and the step's reads. A kind is added here once.
 */

/** Every kind the controller reads and writes: the targets and the approval object. */
export const CUSTOM_KINDS = [
  'TerraformCluster',
  'TerraformMachine',
  'TerraformMachinePool',
  'TerraformPlan',
] as const;
export type CustomKind = (typeof CUSTOM_KINDS)[number];

/** group/version/plural of a custom resource: what the API paths are made of. */
export interface CustomResource {
  group: string;
  version: string;
  plural: string;
}

/** One row per kind; a kind without its row does not compile. */
export const KINDS: Readonly<Record<CustomKind, KindDefinition>> = {
  TerraformCluster: terraformClusterKind,
  TerraformMachine: terraformMachineKind,
  TerraformMachinePool: terraformMachinePoolKind,
  TerraformPlan: terraformPlanKind,
};

/**
 * The templates Cluster API clones into the target kinds. The controller never reads them, so they are
 * neither watched nor in `CUSTOM_KINDS`; Cluster API reads them (infra/rbac/cluster-api.yaml).
 */
export const TEMPLATE_KINDS = [
  'TerraformClusterTemplate',
  'TerraformMachineTemplate',
  'TerraformMachinePoolTemplate',
] as const;
export type TemplateKind = (typeof TEMPLATE_KINDS)[number];

/** One row per template kind. */
export const TEMPLATES: Readonly<Record<TemplateKind, KindDefinition>> = {
  TerraformClusterTemplate: terraformClusterTemplateKind,
  TerraformMachineTemplate: terraformMachineTemplateKind,
  TerraformMachinePoolTemplate: terraformMachinePoolTemplateKind,
};

/**
 * The parameters of our admission policies (infra/admission/): the API server's admission reads them, the
 * controller never does, so they are neither watched nor in `CUSTOM_KINDS`.
 */
export const POLICY_KINDS = ['TerraformRunPolicy'] as const;
export type PolicyKind = (typeof POLICY_KINDS)[number];

/** One row per policy kind. */
export const POLICIES: Readonly<Record<PolicyKind, KindDefinition>> = {
  TerraformRunPolicy: terraformRunPolicyKind,
};

/** Every kind with a CRD, in the order their CRDs are written. */
export const KIND_DEFINITIONS: readonly KindDefinition[] = [
  ...CUSTOM_KINDS.map((kind) => KINDS[kind]),
  ...TEMPLATE_KINDS.map((kind) => TEMPLATES[kind]),
  ...POLICY_KINDS.map((kind) => POLICIES[kind]),
];

/** The API coordinates of one of our kinds. */
export function resourceOf(kind: CustomKind): CustomResource {
  return { group: API_GROUP, version: API_VERSION_NAME, plural: KINDS[kind].plural };
}

/** `apiVersion` of our kinds, as written in manifests. */
export const OUR_API_VERSION = API_VERSION;

/** The spec and status schemas of the target kinds, typed as the step reads them. */
export const TARGET_SCHEMAS: Readonly<
  Record<TargetKind, { spec: z.ZodType<TargetSpec>; status: z.ZodType<TargetStatus> }>
> = {
  TerraformCluster: { spec: TerraformClusterSpecSchema, status: TerraformClusterStatusSchema },
  TerraformMachine: { spec: TerraformMachineSpecSchema, status: TerraformMachineStatusSchema },
  TerraformMachinePool: { spec: TerraformMachinePoolSpecSchema, status: TerraformMachinePoolStatusSchema },
};
