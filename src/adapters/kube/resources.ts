import { type CustomKind, type CustomResource, resourceOf } from '../../schemas/kinds/registry.ts';

/**
 * The custom resources the adapter reads and writes, by kind (src/schemas/kinds/registry.ts), plus Cluster
 * API's `Cluster` (read only; may not be installed).
 */

/** group/version/plural of each of our kinds, from the registry. */
export const CUSTOM_RESOURCES: Readonly<Record<CustomKind, CustomResource>> = {
  TerraformCluster: resourceOf('TerraformCluster'),
  TerraformMachine: resourceOf('TerraformMachine'),
  TerraformMachinePool: resourceOf('TerraformMachinePool'),
  TerraformPlan: resourceOf('TerraformPlan'),
};

/** Cluster API's `Cluster` (for `spec.paused` and the cluster a machine belongs to). */
export const CAPI_CLUSTER: CustomResource = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta1',
  plural: 'clusters',
};
