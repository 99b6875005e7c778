import type { TerraformClusterSpec, TerraformClusterStatus } from './terraform-cluster.ts';
import type { TerraformMachineSpec, TerraformMachineStatus } from './terraform-machine.ts';
import type { TerraformMachinePoolSpec, TerraformMachinePoolStatus } from './terraform-machine-pool.ts';

/**
 * The spec and status of any target kind (DESIGN.md section 2), as the step reads and writes them: the
 * common fields plus each kind's Cluster API contract fields, all optional.
 */

/** A spec of any target kind. */
export type TargetSpec = TerraformClusterSpec &
  Partial<Pick<TerraformMachineSpec, 'providerID'>> &
  Partial<Pick<TerraformMachinePoolSpec, 'providerIDList'>>;

/** A status of any target kind. */
export type TargetStatus = TerraformClusterStatus &
  Partial<Pick<TerraformMachineStatus, 'addresses'>> &
  Partial<Pick<TerraformMachinePoolStatus, 'replicas'>>;
