/**
 * The names of the module outputs the Cluster API contract needs (DESIGN.md section 2), in a fixed order:
 * the one list the runner reads outputs by (src/runner/contract-outputs.ts), the result document parses
 * (src/schemas/result.ts) and the controller checks and records (src/schemas/contract-outputs.ts). A leaf
 * module, so the result schema, which the status schemas import, can name them without an import cycle.
 */
export const CONTRACT_OUTPUT_NAMES = [
  'controlPlaneEndpoint',
  'failureDomains',
  'exports',
  'providerID',
  'addresses',
  'providerIDList',
  'replicas',
] as const;

/** One contract output name. */
export type ContractOutputName = (typeof CONTRACT_OUTPUT_NAMES)[number];
