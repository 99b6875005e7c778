import { type CustomKind, type CustomResource, resourceOf } from '../../schemas/kinds/registry.ts';

/**
 * The custom resources the adapter reads and writes, by kind (src/schemas/kinds/registry.ts), plus Cluster
 * API's `Cluster`, `Machine` and `MachinePool` (read only; Cluster API may not be installed).
 */

/** group/version/plural of each of our kinds, from the registry. */
export const CUSTOM_RESOURCES: Readonly<Record<CustomKind, CustomResource>> = {
  TerraformCluster: resourceOf('TerraformCluster'),
  TerraformMachine: resourceOf('TerraformMachine'),
  TerraformMachinePool: resourceOf('TerraformMachinePool'),
  TerraformPlan: resourceOf('TerraformPlan'),
};

/** The Cluster API kinds a step reads: the Cluster (pause, infrastructure), a machine's or pool's owner. */
export type CapiKind = 'Cluster' | 'Machine' | 'MachinePool';

/** Cluster API's group; the v1beta2 contract (CAPI v1.11 and later) is the one our CRDs declare. */
export const CAPI_GROUP = 'cluster.x-k8s.io';

/** group/version/plural of each Cluster API kind read. */
export const CAPI_RESOURCES: Readonly<Record<CapiKind, CustomResource>> = {
  Cluster: { group: CAPI_GROUP, version: 'v1beta2', plural: 'clusters' },
  Machine: { group: CAPI_GROUP, version: 'v1beta2', plural: 'machines' },
  MachinePool: { group: CAPI_GROUP, version: 'v1beta2', plural: 'machinepools' },
};
