import { z } from 'zod';
import { API_VERSION } from './api-group.ts';
import { type KindDefinition, TARGET_PRINTER_COLUMNS } from './kind-definition.ts';
import { ObjectMetaSchema } from './object-meta.ts';
import { nameFitsOwnerLabel, withRules } from './rules.ts';
import { commonSpecShape } from './spec.ts';
import { commonStatusShape } from './status.ts';

/** Cluster API contract: a machine address (filled from module outputs). */
export const MachineAddressSchema = z.object({
  type: z.enum(['Hostname', 'ExternalIP', 'InternalIP', 'ExternalDNS', 'InternalDNS']),
  address: z.string().max(256),
});

export const TerraformMachineSpecSchema = z
  .object({
    ...commonSpecShape,
    providerID: z
      .string()
      .max(512)
      .optional()
      .describe('Cluster API contract: written by the controller from the module output providerID.'),
  })
  .describe(
    'Desired state of a TerraformMachine; spec.jobs is merged over the cluster’s spec.defaults.jobs.',
  );
export type TerraformMachineSpec = z.infer<typeof TerraformMachineSpecSchema>;

export const TerraformMachineStatusSchema = z
  .object({
    ...commonStatusShape,
    addresses: z
      .array(MachineAddressSchema)
      .max(32)
      .optional()
      .describe('Cluster API contract: machine addresses.'),
  })
  .describe('Observed state of a TerraformMachine.');
export type TerraformMachineStatus = z.infer<typeof TerraformMachineStatusSchema>;

export const TerraformMachineSchema = withRules(
  z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal('TerraformMachine'),
    metadata: ObjectMetaSchema,
    spec: TerraformMachineSpecSchema,
    status: TerraformMachineStatusSchema.optional(),
  }),
  [nameFitsOwnerLabel],
);
export type TerraformMachine = z.infer<typeof TerraformMachineSchema>;

export const terraformMachineKind: KindDefinition = {
  kind: 'TerraformMachine',
  plural: 'terraformmachines',
  singular: 'terraformmachine',
  shortNames: ['tfm'],
  description:
    'One machine of a Cluster API cluster, built by a Terraform/OpenTofu module that runs as Kubernetes Jobs.',
  spec: TerraformMachineSpecSchema,
  status: TerraformMachineStatusSchema,
  rootRules: [nameFitsOwnerLabel],
  printerColumns: TARGET_PRINTER_COLUMNS,
};
