import { CONTRACT_OUTPUT_NAMES } from '../schemas/contract-output-names.ts';
import { type ContractOutputs, checkContractOutputs } from '../schemas/contract-outputs.ts';
import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { UiOutput } from './machine-ui.ts';

/**
 * The few module outputs the Cluster API contract needs (DESIGN.md section 2): read by these exact root
 * output names (they match the Cluster API fields they fill), each checked against the schema of its CRD
 * field (src/schemas/contract-outputs.ts). Nothing else leaves the Job.
 */

/**
 * Outcome: the outputs to report (those `kind` records, checked; the others as they are, for the size
 * rules to drop), and the names of those the CRD would refuse (never values).
 */
export interface ContractOutputsRead {
  outputs: ContractOutputs;
  rejected: string[];
}

/**
 * Picks the contract outputs from an `outputs` message. A sensitive output has no value there and is
 * skipped; an output of the wrong shape is rejected by name (the run then fails with `OutputsInvalid`).
 */
export function readContractOutputs(
  ui: Record<string, UiOutput> | undefined,
  kind?: TargetKind,
): ContractOutputsRead {
  const reported: Record<string, unknown> = {};
  for (const name of CONTRACT_OUTPUT_NAMES) {
    const value = ui?.[name]?.value;
    if (value !== undefined) reported[name] = value;
  }
  const checked = checkContractOutputs(reported, kind);
  const rejected = checked.invalid.map((i) => i.name);
  // Outputs this kind does not record travel unchecked (they are cut first when the result is too long).
  const others = Object.fromEntries(
    Object.entries(reported).filter(
      ([name]) => !(name in checked.outputs) && !rejected.includes(name as never),
    ),
  );
  return { outputs: { ...others, ...checked.outputs } as ContractOutputs, rejected: rejected.sort() };
}
