import { z } from 'zod';
import { API_VERSION } from './api-group.ts';
import type { KindDefinition, PrinterColumn } from './kind-definition.ts';
import { ObjectMetaSchema } from './object-meta.ts';
import {
  controlPlaneEndpointNotInTemplate,
  outputsNotInTemplate,
  providerIDListNotInTemplate,
  providerIDNotInTemplate,
  withRules,
} from './rules.ts';
import { TerraformClusterSpecSchema } from './terraform-cluster.ts';
import { TerraformMachineSpecSchema } from './terraform-machine.ts';
import { TerraformMachinePoolSpecSchema } from './terraform-machine-pool.ts';

/**
 * The template kinds Cluster API clones into our kinds (DESIGN.md section 2; Cluster API's v1beta2
 * InfraCluster, InfraMachine and InfraMachinePool contracts): `TerraformMachineTemplate` for
 * MachineDeployments, MachineSets and KubeadmControlPlane, `TerraformClusterTemplate` and
 * `TerraformMachinePoolTemplate` for ClusterClass. Each holds `spec.template.metadata` and
 * `spec.template.spec`, the cloned kind's own spec schema (same fields, defaults and rules) minus the
 * fields the controller writes per object. No status: the controller never reads or writes a template.
 */

/** `spec.template.metadata`: Cluster API's `ObjectMeta`, copied onto every clone. */
const TemplateMetadataSchema = z
  .object({
    labels: z
      .record(z.string(), z.string())
      .optional()
      .describe('Labels Cluster API puts on every object cloned from the template.'),
    annotations: z
      .record(z.string(), z.string())
      .optional()
      .describe('Annotations Cluster API puts on every object cloned from the template.'),
  })
  .describe('Labels and annotations of the objects cloned from the template.');

/** The spec of a template of `cloned`: `{template: {metadata, spec}}`. */
function templateSpecSchema<S extends z.ZodType>(cloned: string, spec: S) {
  return z
    .object({
      template: z
        .object({ metadata: TemplateMetadataSchema.optional(), spec })
        .describe(`What Cluster API clones into each ${cloned}.`),
    })
    .describe(`Desired state of a ${cloned}Template.`);
}

/** Per template kind, the rules refusing its clone's fields that the controller writes on each clone. */
export const REFUSED_IN_TEMPLATE = {
  TerraformClusterTemplate: [controlPlaneEndpointNotInTemplate, outputsNotInTemplate],
  TerraformMachineTemplate: [providerIDNotInTemplate, outputsNotInTemplate],
  TerraformMachinePoolTemplate: [providerIDListNotInTemplate, outputsNotInTemplate],
} as const;

export const TerraformClusterTemplateSpecSchema = templateSpecSchema(
  'TerraformCluster',
  withRules(TerraformClusterSpecSchema, REFUSED_IN_TEMPLATE.TerraformClusterTemplate),
);

export const TerraformMachineTemplateSpecSchema = templateSpecSchema(
  'TerraformMachine',
  withRules(TerraformMachineSpecSchema, REFUSED_IN_TEMPLATE.TerraformMachineTemplate),
);

export const TerraformMachinePoolTemplateSpecSchema = templateSpecSchema(
  'TerraformMachinePool',
  withRules(TerraformMachinePoolSpecSchema, REFUSED_IN_TEMPLATE.TerraformMachinePoolTemplate),
);

/** A whole template object of `kind` with `spec`. */
function templateSchema<K extends string, S extends z.ZodType>(kind: K, spec: S) {
  return z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(kind),
    metadata: ObjectMetaSchema,
    spec,
  });
}

export const TerraformClusterTemplateSchema = templateSchema(
  'TerraformClusterTemplate',
  TerraformClusterTemplateSpecSchema,
);

export const TerraformMachineTemplateSchema = templateSchema(
  'TerraformMachineTemplate',
  TerraformMachineTemplateSpecSchema,
);

export const TerraformMachinePoolTemplateSchema = templateSchema(
  'TerraformMachinePoolTemplate',
  TerraformMachinePoolTemplateSpecSchema,
);

/** `kubectl get` columns of a template: the module image its clones run, and Age. */
const TEMPLATE_PRINTER_COLUMNS: readonly PrinterColumn[] = [
  {
    name: 'Image',
    type: 'string',
    jsonPath: '.spec.template.spec.source.image',
    description: 'The module image of the objects cloned from the template.',
  },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

export const terraformClusterTemplateKind: KindDefinition = {
  kind: 'TerraformClusterTemplate',
  plural: 'terraformclustertemplates',
  singular: 'terraformclustertemplate',
  shortNames: ['tfct'],
  description:
    'A template ClusterClass clones into the TerraformCluster of each Cluster API cluster it creates.',
  spec: TerraformClusterTemplateSpecSchema,
  rootRules: [],
  printerColumns: TEMPLATE_PRINTER_COLUMNS,
};

export const terraformMachineTemplateKind: KindDefinition = {
  kind: 'TerraformMachineTemplate',
  plural: 'terraformmachinetemplates',
  singular: 'terraformmachinetemplate',
  shortNames: ['tfmt'],
  description:
    'A template Cluster API (MachineDeployment, MachineSet, KubeadmControlPlane, ClusterClass) clones into one TerraformMachine per Machine.',
  spec: TerraformMachineTemplateSpecSchema,
  rootRules: [],
  printerColumns: TEMPLATE_PRINTER_COLUMNS,
};

export const terraformMachinePoolTemplateKind: KindDefinition = {
  kind: 'TerraformMachinePoolTemplate',
  plural: 'terraformmachinepooltemplates',
  singular: 'terraformmachinepooltemplate',
  shortNames: ['tfmpt'],
  description: 'A template ClusterClass clones into the TerraformMachinePool of each MachinePool it creates.',
  spec: TerraformMachinePoolTemplateSpecSchema,
  rootRules: [],
  printerColumns: TEMPLATE_PRINTER_COLUMNS,
};
