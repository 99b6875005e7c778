import { z } from 'zod';
import { ApiEndpointSchema } from './api-endpoint.ts';
import { API_VERSION } from './api-group.ts';
import { JobsPolicySchema } from './jobs-policy.ts';
import { type KindDefinition, TARGET_PRINTER_COLUMNS } from './kind-definition.ts';
import { ObjectMetaSchema } from './object-meta.ts';
import { nameFitsOwnerLabel, withRules } from './rules.ts';
import { commonSpecShape } from './spec.ts';
import { commonStatusShape } from './status.ts';

export const TerraformClusterSpecSchema = z
  .object({
    ...commonSpecShape,
    controlPlaneEndpoint: ApiEndpointSchema.optional().describe(
      'Cluster API contract: written by the controller from the module output controlPlaneEndpoint.',
    ),
    defaults: z
      .object({
        jobs: JobsPolicySchema.optional().describe(
          'Job policy of this cluster’s machines and pools, merged field by field under their own spec.jobs.',
        ),
      })
      .optional()
      .describe('Defaults for the TerraformMachines and TerraformMachinePools of this cluster.'),
  })
  .describe('Desired state of a TerraformCluster.');
export type TerraformClusterSpec = z.infer<typeof TerraformClusterSpecSchema>;

/** Cluster API contract: one failure domain (`status.failureDomains[]`, CAPI v1beta2 InfraCluster). */
export const FailureDomainSchema = z.object({
  name: z.string().min(1).max(256),
  controlPlane: z.boolean().optional(),
  attributes: z.record(z.string(), z.string()).optional(),
});

/** Longest `exports` (canonical JSON bytes): it travels in the 4096-byte runner result. */
export const EXPORTS_MAX_BYTES = 1024;

/** The cluster module's `exports` output: a JSON object handed to its machines' and pools' modules. */
export const ClusterExportsSchema = z
  .record(
    z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_-]*$/)
      .max(128),
    z.unknown(),
  )
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= EXPORTS_MAX_BYTES, {
    message: `at most ${EXPORTS_MAX_BYTES} bytes of JSON`,
  });

export const TerraformClusterStatusSchema = z
  .object({
    ...commonStatusShape,
    failureDomains: z
      .array(FailureDomainSchema)
      .max(64)
      .optional()
      .describe('Cluster API contract: failure domains, from the module output failureDomains.'),
    exports: z.record(z.string(), z.unknown()).optional().meta({
      'x-kubernetes-preserve-unknown-fields': true,
      description:
        'The module output exports (a JSON object, at most 1024 bytes), handed to the modules of the cluster’s machines and pools as cluster_exports.',
    }),
  })
  .describe('Observed state of a TerraformCluster.');
export type TerraformClusterStatus = z.infer<typeof TerraformClusterStatusSchema>;

export const TerraformClusterSchema = withRules(
  z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal('TerraformCluster'),
    metadata: ObjectMetaSchema,
    spec: TerraformClusterSpecSchema,
    status: TerraformClusterStatusSchema.optional(),
  }),
  [nameFitsOwnerLabel],
);
export type TerraformCluster = z.infer<typeof TerraformClusterSchema>;

export const terraformClusterKind: KindDefinition = {
  kind: 'TerraformCluster',
  plural: 'terraformclusters',
  singular: 'terraformcluster',
  shortNames: ['tfc'],
  description:
    'Cluster infrastructure of a Cluster API cluster, built by a Terraform/OpenTofu module that runs as Kubernetes Jobs.',
  spec: TerraformClusterSpecSchema,
  status: TerraformClusterStatusSchema,
  rootRules: [nameFitsOwnerLabel],
  printerColumns: TARGET_PRINTER_COLUMNS,
};
