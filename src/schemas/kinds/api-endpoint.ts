import { z } from 'zod';

/**
 * Cluster API contract: where the control plane answers (a TerraformCluster's `spec.controlPlaneEndpoint`,
 * filled from module outputs). A module of its own: the run config carries it too, and the kinds import
 * the run config's vocabularies.
 */
export const ApiEndpointSchema = z.object({
  host: z.string().max(512),
  port: z.number().int().min(1).max(65_535),
});
