import { type ContractOutputs, ContractOutputsSchema } from '../schemas/result.ts';
import type { UiOutput } from './machine-ui.ts';

/**
 * The few module outputs the Cluster API contract needs (DESIGN.md section 2): read by these exact root
 * output names, each checked against its field of ContractOutputsSchema. Nothing else leaves the Job.
 */

type ContractField = keyof ContractOutputs;

/** Module output name for each contract field; the names match the Cluster API fields they fill. */
export const CONTRACT_OUTPUT_NAMES: Record<ContractField, string> = {
  controlPlaneEndpoint: 'controlPlaneEndpoint',
  providerID: 'providerID',
  addresses: 'addresses',
  providerIDList: 'providerIDList',
  replicas: 'replicas',
};

/** Outcome: the outputs that passed their schema, and the names of those that did not (for the log). */
export interface ContractOutputsRead {
  outputs: ContractOutputs;
  rejected: string[];
}

/**
 * Picks the contract outputs from an `outputs` message. A sensitive output has no value there and is
 * skipped; an output of the wrong shape is rejected by name (never by value).
 */
export function readContractOutputs(ui: Record<string, UiOutput> | undefined): ContractOutputsRead {
  const read: ContractOutputsRead = { outputs: {}, rejected: [] };
  if (ui === undefined) return read;
  const fields = Object.keys(CONTRACT_OUTPUT_NAMES) as ContractField[];
  for (const field of fields) {
    const name = CONTRACT_OUTPUT_NAMES[field];
    const value = ui[name]?.value;
    if (value === undefined) continue;
    const parsed = ContractOutputsSchema.shape[field].safeParse(value);
    if (parsed.success && parsed.data !== undefined) {
      Object.assign(read.outputs, { [field]: parsed.data });
    } else {
      read.rejected.push(name);
    }
  }
  return read;
}
