/**
 * The API group and version of our kinds (DESIGN.md section 2). Cluster API finds infrastructure providers
 * by this group.
 */
export const API_GROUP = 'infrastructure.cluster.x-k8s.io';
export const API_VERSION_NAME = 'v1alpha1';
/** `apiVersion` as written in manifests. */
export const API_VERSION = `${API_GROUP}/${API_VERSION_NAME}`;

/**
 * The Cluster API contract version the kinds implement: CAPI reads `cluster.x-k8s.io/<contract>` on our CRDs
 * to find the version of ours to use, and clusterctl reads it from metadata.yaml.
 */
export const CLUSTER_API_CONTRACT = 'v1beta2';

/** clusterctl's provider label value (`cluster.x-k8s.io/provider`): `infrastructure-<name>`. */
export const PROVIDER_LABEL_VALUE = 'infrastructure-terraform';

/** The kinds whose operations run as Jobs (DESIGN.md section 2). */
export const TARGET_KINDS = ['TerraformCluster', 'TerraformMachine', 'TerraformMachinePool'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** True when `kind` names one of the target kinds (for strings read from labels, events and Redis). */
export function isTargetKind(kind: string | undefined): kind is TargetKind {
  return (TARGET_KINDS as readonly string[]).includes(kind ?? '');
}
