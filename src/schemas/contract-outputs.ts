import { z } from 'zod';
import { CONTRACT_OUTPUT_NAMES, type ContractOutputName } from './contract-output-names.ts';
import { ApiEndpointSchema } from './kinds/api-endpoint.ts';
import type { TargetKind } from './kinds/api-group.ts';
import { ClusterExportsSchema, FailureDomainSchema } from './kinds/terraform-cluster.ts';
import { MachineAddressSchema, TerraformMachineSpecSchema } from './kinds/terraform-machine.ts';
import {
  TerraformMachinePoolSpecSchema,
  TerraformMachinePoolStatusSchema,
} from './kinds/terraform-machine-pool.ts';

/**
 * The few module outputs the Cluster API contract needs (DESIGN.md section 2), checked against the very
 * schemas the CRDs are generated from: an output the API server would refuse is caught where it is read
 * (the runner) and again where it is recorded (bookkeeping), and fails the run with `OutputsInvalid`,
 * naming the output, instead of freezing the object behind a status write that can never succeed.
 */

/** One schema per contract output (src/schemas/contract-output-names.ts), each the schema of the field it fills. */
export const CONTRACT_OUTPUT_SCHEMAS = {
  controlPlaneEndpoint: ApiEndpointSchema,
  failureDomains: z.array(FailureDomainSchema).max(64),
  exports: ClusterExportsSchema,
  providerID: TerraformMachineSpecSchema.shape.providerID.unwrap(),
  addresses: z.array(MachineAddressSchema).max(32),
  providerIDList: TerraformMachinePoolSpecSchema.shape.providerIDList.unwrap(),
  replicas: TerraformMachinePoolStatusSchema.shape.replicas.unwrap(),
} as const satisfies Record<ContractOutputName, z.ZodType>;

/** The outputs each kind's CRD records (DESIGN.md section 2); a kind ignores the others. */
export const CONTRACT_OUTPUTS_OF_KIND: Readonly<Record<TargetKind, readonly ContractOutputName[]>> = {
  TerraformCluster: ['controlPlaneEndpoint', 'failureDomains', 'exports'],
  TerraformMachine: ['providerID', 'addresses'],
  TerraformMachinePool: ['providerIDList', 'replicas'],
};

/** The contract outputs, each as the CRD accepts it, each optional: {@link CONTRACT_OUTPUT_SCHEMAS}. */
export const ContractOutputsSchema = z.object(CONTRACT_OUTPUT_SCHEMAS).partial();
export type ContractOutputs = z.infer<typeof ContractOutputsSchema>;

/** One output the CRD would refuse: its name and why (never its value). */
export interface InvalidOutput {
  name: ContractOutputName;
  message: string;
}

/** The outputs that pass, and the ones that do not. */
export interface CheckedOutputs {
  outputs: ContractOutputs;
  invalid: InvalidOutput[];
}

/**
 * Checks reported outputs against the CRD's schemas: those `kind` records (all when it is not known);
 * absent outputs are neither valid nor invalid, outputs another kind records are left unchecked.
 */
export function checkContractOutputs(
  reported: Readonly<Record<string, unknown>> | undefined,
  kind?: TargetKind,
): CheckedOutputs {
  const checked: CheckedOutputs = { outputs: {}, invalid: [] };
  for (const name of kind === undefined ? CONTRACT_OUTPUT_NAMES : CONTRACT_OUTPUTS_OF_KIND[kind]) {
    const value = reported?.[name];
    if (value === undefined) continue;
    const parsed = CONTRACT_OUTPUT_SCHEMAS[name].safeParse(value);
    if (parsed.success) Object.assign(checked.outputs, { [name]: parsed.data });
    else {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
      checked.invalid.push({ name, message: `${where}${issue?.message ?? 'invalid'}` });
    }
  }
  return checked;
}

/** A sentence naming the refused outputs, for `lastRun.error.summary` and Events. */
export function invalidOutputsSummary(invalid: readonly InvalidOutput[]): string {
  return `the Cluster API contract refuses output ${invalid.map((i) => `${i.name} (${i.message})`).join(', ')}`;
}
