import { z } from 'zod';
import { API_VERSION } from './api-group.ts';
import { type KindDefinition, TARGET_PRINTER_COLUMNS } from './kind-definition.ts';
import { ObjectMetaSchema } from './object-meta.ts';
import { nameFitsOwnerLabel, withRules } from './rules.ts';
import { commonSpecShape } from './spec.ts';
import { commonStatusShape } from './status.ts';

export const TerraformMachinePoolSpecSchema = z
  .object({
    ...commonSpecShape,
    providerIDList: z
      .array(z.string().max(512))
      .max(10_000)
      .optional()
      .describe('Cluster API contract: written by the controller from the module output providerIDList.'),
  })
  .describe(
    'Desired state of a TerraformMachinePool; spec.jobs is merged over the cluster’s spec.defaults.jobs.',
  );
export type TerraformMachinePoolSpec = z.infer<typeof TerraformMachinePoolSpecSchema>;

export const TerraformMachinePoolStatusSchema = z
  .object({
    ...commonStatusShape,
    replicas: z.number().int().min(0).optional().describe('Cluster API contract: machines in the pool.'),
  })
  .describe('Observed state of a TerraformMachinePool.');
export type TerraformMachinePoolStatus = z.infer<typeof TerraformMachinePoolStatusSchema>;

export const TerraformMachinePoolSchema = withRules(
  z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal('TerraformMachinePool'),
    metadata: ObjectMetaSchema,
    spec: TerraformMachinePoolSpecSchema,
    status: TerraformMachinePoolStatusSchema.optional(),
  }),
  [nameFitsOwnerLabel],
);
export type TerraformMachinePool = z.infer<typeof TerraformMachinePoolSchema>;

export const terraformMachinePoolKind: KindDefinition = {
  kind: 'TerraformMachinePool',
  plural: 'terraformmachinepools',
  singular: 'terraformmachinepool',
  shortNames: ['tfmp'],
  description:
    'A machine pool of a Cluster API cluster, built by a Terraform/OpenTofu module that runs as Kubernetes Jobs.',
  spec: TerraformMachinePoolSpecSchema,
  status: TerraformMachinePoolStatusSchema,
  rootRules: [nameFitsOwnerLabel],
  printerColumns: TARGET_PRINTER_COLUMNS,
};
