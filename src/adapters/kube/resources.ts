/**
 * The custom resources the adapter reads and writes, by kind (DESIGN.md section 2), plus Cluster API's
 * `Cluster` (read only; may not be installed).
 */

/** Our kinds, including the approval object. */
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

/** API group and version of our kinds (DESIGN.md section 2). */
export const OUR_GROUP = 'infrastructure.cluster.x-k8s.io';
export const OUR_VERSION = 'v1alpha1';

/** One row per kind; a kind without its row does not compile. */
export const CUSTOM_RESOURCES: Record<CustomKind, CustomResource> = {
  TerraformCluster: { group: OUR_GROUP, version: OUR_VERSION, plural: 'terraformclusters' },
  TerraformMachine: { group: OUR_GROUP, version: OUR_VERSION, plural: 'terraformmachines' },
  TerraformMachinePool: { group: OUR_GROUP, version: OUR_VERSION, plural: 'terraformmachinepools' },
  TerraformPlan: { group: OUR_GROUP, version: OUR_VERSION, plural: 'terraformplans' },
};

/** Cluster API's `Cluster` (for `spec.paused` and the cluster a machine belongs to). */
export const CAPI_CLUSTER: CustomResource = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta1',
  plural: 'clusters',
};

/** `apiVersion` of our kinds, e.g. for objects the step creates (TerraformPlan). */
export const OUR_API_VERSION = `${OUR_GROUP}/${OUR_VERSION}`;
