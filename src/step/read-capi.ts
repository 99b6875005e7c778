import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { z } from 'zod';
import type { CustomObject } from '../adapters/kube/custom-object.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import { CAPI_GROUP } from '../adapters/kube/resources.ts';
import { canonicalJson } from '../core/canonical-json.ts';
import {
  type BootstrapData,
  CAPI_OWNER_KIND,
  type CapiClusterView,
  type CapiContext,
  type CapiOwner,
  CLONED_FROM_NAME_ANNOTATION,
  type ClusterMemberView,
  CONTROL_PLANE_LABEL,
  DEFAULT_BOOTSTRAP_FORMAT,
  PAUSED_ANNOTATION,
} from '../core/cluster-api.ts';
import { LABELS } from '../core/job-labels.ts';
import type { ObjectKind, ObjectRef } from '../core/object-ref.ts';
import { API_GROUP } from '../schemas/kinds/api-group.ts';

/**
 * The Cluster API reads of a step (src/core/cluster-api.ts): the owner Cluster API set on the object (a
 * Machine or MachinePool, cluster.x-k8s.io/v1beta2), the bootstrap data Secret it names, and the Cluster's
 * `status.initialization.infrastructureProvisioned`. Only the fields the contract needs are parsed; a field
 * of the wrong type reads as absent, never as a reason to fail the step.
 */

const BootstrapSchema = z.looseObject({ dataSecretName: z.string().min(1).optional() });

const MachineSchema = z.looseObject({
  metadata: z.looseObject({ labels: z.record(z.string(), z.string()).optional() }),
  spec: z
    .looseObject({
      version: z.string().optional(),
      failureDomain: z.string().optional(),
      bootstrap: BootstrapSchema.optional(),
    })
    .optional(),
});

const MachinePoolSchema = z.looseObject({
  spec: z
    .looseObject({
      replicas: z.number().int().min(0).optional(),
      failureDomains: z.array(z.string()).optional(),
      template: z
        .looseObject({
          spec: z
            .looseObject({ version: z.string().optional(), bootstrap: BootstrapSchema.optional() })
            .optional(),
        })
        .optional(),
    })
    .optional(),
});

const ClusterStatusSchema = z.looseObject({
  initialization: z.looseObject({ infrastructureProvisioned: z.boolean().optional() }).optional(),
});

/** A v1beta2 contract reference (`{apiGroup, kind, name}`), as Machines and MachinePools name our objects. */
const ContractReferenceSchema = z.looseObject({ apiGroup: z.string(), kind: z.string(), name: z.string() });

const MachineInfrastructureSchema = z.looseObject({
  spec: z.looseObject({ infrastructureRef: ContractReferenceSchema }),
});

const MachinePoolInfrastructureSchema = z.looseObject({
  spec: z.looseObject({
    template: z.looseObject({ spec: z.looseObject({ infrastructureRef: ContractReferenceSchema }) }),
  }),
});

const MemberSchema = z.looseObject({
  status: z
    .looseObject({
      waitReason: z.string().optional(),
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    })
    .optional(),
});

/** Whether any owner reference is of Cluster API's group (a Cluster, Machine or MachinePool). */
export function ownedByClusterApi(object: CustomObject): boolean {
  return (object.metadata.ownerReferences ?? []).some((reference) =>
    reference.apiVersion.startsWith(`${CAPI_GROUP}/`),
  );
}

/** The owner reference Cluster API set on an object of `ref.kind`, when there is one. */
export function capiOwnerReference(
  ref: ObjectRef,
  object: CustomObject,
): { kind: CapiOwner['kind']; name: string } | undefined {
  const kind = CAPI_OWNER_KIND[ref.kind];
  if (kind === undefined) return undefined;
  const owner = object.metadata.ownerReferences?.find(
    (reference) => reference.kind === kind && reference.apiVersion.startsWith(`${CAPI_GROUP}/`),
  );
  return owner ? { kind, name: owner.name } : undefined;
}

function ownerOf(kind: CapiOwner['kind'], name: string, raw: CustomObject): CapiOwner {
  if (kind === 'Machine') {
    const machine = MachineSchema.safeParse(raw);
    const spec = machine.success ? machine.data.spec : undefined;
    const labels = machine.success ? machine.data.metadata.labels : undefined;
    return {
      kind,
      name,
      ...(spec?.version !== undefined ? { version: spec.version } : {}),
      controlPlane: labels?.[CONTROL_PLANE_LABEL] !== undefined,
      ...(spec?.failureDomain ? { failureDomain: spec.failureDomain } : {}),
      ...(spec?.bootstrap?.dataSecretName ? { bootstrapDataSecretName: spec.bootstrap.dataSecretName } : {}),
    };
  }
  const pool = MachinePoolSchema.safeParse(raw);
  const spec = pool.success ? pool.data.spec : undefined;
  const template = spec?.template?.spec;
  return {
    kind,
    name,
    ...(template?.version !== undefined ? { version: template.version } : {}),
    controlPlane: false,
    ...(spec?.failureDomains && spec.failureDomains.length > 0
      ? { failureDomain: spec.failureDomains.join(',') }
      : {}),
    ...(template?.bootstrap?.dataSecretName
      ? { bootstrapDataSecretName: template.bootstrap.dataSecretName }
      : {}),
    ...(spec?.replicas !== undefined ? { replicas: spec.replicas } : {}),
  };
}

function bootstrapDataOf(secret: V1Secret | undefined): BootstrapData | undefined {
  const value = secret?.data?.value;
  if (value === undefined) return undefined;
  const format = secret?.data?.format;
  return {
    value: Buffer.from(value, 'base64').toString('utf8'),
    format: format === undefined ? DEFAULT_BOOTSTRAP_FORMAT : Buffer.from(format, 'base64').toString('utf8'),
  };
}

/** `status.initialization.infrastructureProvisioned` of a Cluster API Cluster; undefined without one. */
export function infrastructureProvisioned(cluster: CustomObject | undefined): boolean | undefined {
  if (cluster === undefined) return undefined;
  const status = ClusterStatusSchema.safeParse(cluster.status ?? {});
  return status.success ? status.data.initialization?.infrastructureProvisioned === true : false;
}

/**
 * Cluster API's view of the object, or undefined for an object Cluster API does not drive: no owner of
 * the contract's kind, not cloned from a template, and not labelled with the name of an existing Cluster
 * API Cluster. A machine or pool written by hand for a Machine or MachinePool of that Cluster waits for its
 * owner like a clone does: applied before, it would run without the owner's inputs (bootstrap data,
 * replicas) and be applied again once adopted. `capiCluster` is the view of the Cluster the step read or
 * found cached (or its pending read); undefined when there is none. Requests: the owner, then its bootstrap Secret once the owner names one.
 */
export async function readCapiContext(
  reader: KubeReader,
  ref: ObjectRef,
  object: CustomObject,
  capiCluster: Promise<CapiClusterView | undefined>,
): Promise<CapiContext | undefined> {
  if (CAPI_OWNER_KIND[ref.kind] === undefined) return undefined;
  const reference = capiOwnerReference(ref, object);
  const cloned = object.metadata.annotations?.[CLONED_FROM_NAME_ANNOTATION] !== undefined;
  const labelled = object.metadata.labels?.[LABELS.clusterName] !== undefined;
  if (reference === undefined && !cloned && !labelled) return undefined;
  const [raw, cluster] = await Promise.all([
    reference ? reader.getCapiObject(reference.kind, ref.namespace, reference.name) : undefined,
    capiCluster,
  ]);
  // Labelled with a cluster that Cluster API does not know: a standalone object of a TerraformCluster.
  if (reference === undefined && !cloned && cluster === undefined) return undefined;
  const clusterPart =
    cluster !== undefined ? { clusterInfrastructureProvisioned: cluster.infrastructureProvisioned } : {};
  // No owner yet, or an owner that cannot be read (gone with its deletion): the object waits for one.
  if (reference === undefined || raw === undefined) return { expectsOwner: true, ...clusterPart };
  const owner = ownerOf(reference.kind, reference.name, raw);
  const secret =
    owner.bootstrapDataSecretName !== undefined
      ? await reader.getSecret(ref.namespace, owner.bootstrapDataSecretName)
      : undefined;
  const bootstrapData = bootstrapDataOf(secret);
  return { expectsOwner: false, ...clusterPart, owner, ...(bootstrapData ? { bootstrapData } : {}) };
}

/** The kind of ours a Machine or MachinePool drives: the inverse of CAPI_OWNER_KIND. */
const DRIVEN_KIND: Readonly<Record<CapiOwner['kind'], ObjectKind>> = {
  Machine: 'TerraformMachine',
  MachinePool: 'TerraformMachinePool',
};

/**
 * SHA-256 over what a step of the object it drives reads of a Machine or MachinePool (`ownerOf`: version,
 * control-plane label, failure domains, bootstrap data Secret name, replicas): an event's copy whose digest
 * equals the one already handled (its status, its other labels) starts no step (src/http/routes/events.ts).
 */
export function capiOwnerDigest(kind: CapiOwner['kind'], raw: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(ownerOf(kind, '', raw as CustomObject)))
    .digest('hex');
}

/**
 * The object of ours a Machine (`spec.infrastructureRef`) or MachinePool
 * (`spec.template.spec.infrastructureRef`) names; undefined when it names another provider's.
 */
export function infrastructureTargetOf(
  kind: CapiOwner['kind'],
  namespace: string,
  raw: CustomObject,
): ObjectRef | undefined {
  const reference =
    kind === 'Machine'
      ? MachineInfrastructureSchema.safeParse(raw).data?.spec.infrastructureRef
      : MachinePoolInfrastructureSchema.safeParse(raw).data?.spec.template.spec.infrastructureRef;
  if (reference === undefined) return undefined;
  const driven = DRIVEN_KIND[kind];
  return reference.apiGroup === API_GROUP && reference.kind === driven
    ? { kind: driven, namespace, name: reference.name }
    : undefined;
}

/** Pause and infrastructure of a Cluster API Cluster. */
export function capiClusterViewOf(cluster: CustomObject): CapiClusterView {
  return {
    paused: capiClusterPaused(cluster),
    infrastructureProvisioned: infrastructureProvisioned(cluster) === true,
  };
}

/** `spec.paused` of a Cluster API Cluster (false without one). */
export function capiClusterPaused(cluster: CustomObject | undefined): boolean {
  const spec = cluster?.spec;
  return typeof spec === 'object' && spec !== null && Reflect.get(spec, 'paused') === true;
}

/** One of our objects as a member of its Cluster API cluster. */
export function clusterMemberViewOf(ref: ObjectRef, object: CustomObject): ClusterMemberView<ObjectRef> {
  const parsed = MemberSchema.safeParse(object);
  const status = parsed.success ? parsed.data.status : undefined;
  const paused = status?.conditions?.find((condition) => condition.type === 'Paused')?.status;
  return {
    ref,
    pausedAnnotation: object.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined,
    ...(paused !== undefined ? { pausedCondition: paused } : {}),
    ...(status?.waitReason !== undefined ? { waitReason: status.waitReason } : {}),
  };
}
