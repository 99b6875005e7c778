import { API_GROUP, API_VERSION_NAME, CLUSTER_API_CONTRACT, PROVIDER_LABEL_VALUE } from './api-group.ts';
import type { KindDefinition } from './kind-definition.ts';
import { type CelRule, celValidation } from './rules.ts';
import { type JsonSchemaNode, toStructuralSchema } from './structural.ts';

/**
 * CustomResourceDefinitions built from the same zod schemas the code validates with (DESIGN.md section 2).
 * scripts/gen-crds.ts writes them to infra/crds/; a unit test checks the committed files are current.
 */

/** A CustomResourceDefinition (apiextensions.k8s.io/v1), as plain data. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: JsonSchemaNode;
}

function rootSchema(definition: KindDefinition): JsonSchemaNode {
  const root: JsonSchemaNode = {
    type: 'object',
    description: definition.description,
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion of this object.' },
      kind: { type: 'string', description: 'Kind of this object.' },
      metadata: { type: 'object' },
      spec: toStructuralSchema(definition.spec, 'spec'),
      ...(definition.status ? { status: toStructuralSchema(definition.status, 'status') } : {}),
    },
    required: ['spec'],
  };
  if (definition.rootRules.length > 0) {
    root['x-kubernetes-validations'] = definition.rootRules.map((rule: CelRule) => celValidation(rule));
  }
  return root;
}

/**
 * The labels of every CRD. Cluster API reads the contract labels to find our version for each contract;
 * clusterctl finds a provider's components by `cluster.x-k8s.io/provider`, and `clusterctl move` the kinds
 * it moves by `clusterctl.cluster.x-k8s.io` (which `clusterctl init` would add; carried here so an install
 * made with `kubectl apply -k` is moved the same way). No
 * `clusterctl.cluster.x-k8s.io/move` or `move-hierarchy`: `clusterctl move` already follows owner
 * references to a Cluster (Cluster API owns our targets and the templates a MachineDeployment or
 * ClusterClass uses; a TerraformPlan is owned by its target), while the labels would also move standalone
 * objects, which no paused Cluster stops from running Jobs in both management clusters during the move.
 */
export const CRD_LABELS: Readonly<Record<string, string>> = {
  'cluster.x-k8s.io/provider': PROVIDER_LABEL_VALUE,
  'clusterctl.cluster.x-k8s.io': '',
  'cluster.x-k8s.io/v1beta1': API_VERSION_NAME,
  [`cluster.x-k8s.io/${CLUSTER_API_CONTRACT}`]: API_VERSION_NAME,
};

/** The CRD of one kind: one served and stored version, status subresource (if any), printer columns. */
export function buildCrd(definition: KindDefinition): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${definition.plural}.${API_GROUP}`,
      labels: { ...CRD_LABELS },
    },
    spec: {
      group: API_GROUP,
      scope: 'Namespaced',
      names: {
        kind: definition.kind,
        listKind: `${definition.kind}List`,
        plural: definition.plural,
        singular: definition.singular,
        shortNames: definition.shortNames,
        categories: ['captf', 'cluster-api'],
      },
      versions: [
        {
          name: API_VERSION_NAME,
          served: true,
          storage: true,
          ...(definition.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: definition.printerColumns,
          schema: { openAPIV3Schema: rootSchema(definition) },
        },
      ],
    },
  };
}

/** The file name of a kind's CRD under infra/crds/. */
export function crdFileName(definition: KindDefinition): string {
  return `${API_GROUP}_${definition.plural}.yaml`;
}
