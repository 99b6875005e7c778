import { createHash } from 'node:crypto';
import type { V1Job, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { z } from 'zod';
import type { CustomObject } from '../adapters/kube/custom-object.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import { canonicalJson, inputsHash, inputsOf } from '../core/inputs-hash.ts';
import { LABELS } from '../core/job-labels.ts';
import { type JobRecord, jobRecord } from '../core/job-record.ts';
import type { JobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import {
  type TerraformClusterSpec,
  TerraformClusterSpecSchema,
  type TerraformClusterStatus,
  TerraformClusterStatusSchema,
} from '../schemas/kinds/terraform-cluster.ts';
import {
  type TerraformMachineSpec,
  TerraformMachineSpecSchema,
  type TerraformMachineStatus,
  TerraformMachineStatusSchema,
} from '../schemas/kinds/terraform-machine.ts';
import {
  type TerraformMachinePoolSpec,
  TerraformMachinePoolSpecSchema,
  type TerraformMachinePoolStatus,
  TerraformMachinePoolStatusSchema,
} from '../schemas/kinds/terraform-machine-pool.ts';
import { type TerraformPlan, TerraformPlanSchema } from '../schemas/kinds/terraform-plan.ts';
import type { ObjectKind, ObjectRef } from './contract.ts';
import { asJobView } from './views.ts';

/**
 * The live world of one object at the start of a step (DESIGN.md section 5 step 2), read from the API
 * server and never from an event payload: the object, its Jobs (label `captf.io/owner-uid`), its pods
 * (on demand), the owning TerraformCluster's `spec.defaults.jobs`, Cluster API pause, the pending
 * TerraformPlan, and the Secret data its inputs reference (kept in memory only, never logged).
 */

/** A spec of any target kind: the common fields plus each kind's contract fields, all optional. */
export type TargetSpec = TerraformClusterSpec &
  Partial<Pick<TerraformMachineSpec, 'providerID'>> &
  Partial<Pick<TerraformMachinePoolSpec, 'providerIDList'>>;

/** A status of any target kind. */
export type TargetStatus = TerraformClusterStatus &
  Partial<Pick<TerraformMachineStatus, 'addresses'>> &
  Partial<Pick<TerraformMachinePoolStatus, 'replicas'>>;

interface KindSchemas {
  spec: z.ZodType<TargetSpec>;
  status: z.ZodType<TargetStatus>;
}

/** One row per kind; a kind without its schemas does not compile. */
const KIND_SCHEMAS: Readonly<Record<ObjectKind, KindSchemas>> = {
  TerraformCluster: { spec: TerraformClusterSpecSchema, status: TerraformClusterStatusSchema },
  TerraformMachine: { spec: TerraformMachineSpecSchema, status: TerraformMachineStatusSchema },
  TerraformMachinePool: { spec: TerraformMachinePoolSpecSchema, status: TerraformMachinePoolStatusSchema },
};

/** Secret data the object's inputs reference, by Secret name; undefined for a Secret that does not exist. */
export type ReferencedSecrets = ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;

/** The owning TerraformCluster of a machine or pool, as far as the step needs it. */
export interface OwningCluster {
  name: string;
  /** `spec.defaults.jobs`, merged under the machine's own `spec.jobs`. */
  defaultsJobs?: JobsPolicy;
  /** `status.ready`: machines apply only once the cluster infrastructure is there. */
  ready: boolean;
}

export interface Snapshot {
  ref: ObjectRef;
  object: CustomObject;
  uid: string;
  generation: number;
  resourceVersion: string;
  /** The parsed spec; `specProblem` says why when it does not parse. */
  spec: TargetSpec | undefined;
  specProblem?: string;
  status: TargetStatus;
  /** `cluster.x-k8s.io/cluster-name`, when the object belongs to a Cluster API cluster. */
  clusterName?: string;
  owningCluster?: OwningCluster;
  /** Cluster API pause: the object's annotation or the Cluster's `spec.paused`. */
  paused: boolean;
  jobs: V1Job[];
  records: JobRecord[];
  /** The TerraformPlan named by `status.pendingPlanRef`, when it exists. */
  pendingPlan?: TerraformPlan;
  referencedSecrets: ReferencedSecrets;
  /** The inputs hash of the live spec (src/core/inputs-hash.ts); '' when the spec does not parse. */
  inputsHash: string;
  /** The object's pods (label `captf.io/owner-uid`), read on first use and then kept for the step. */
  pods(): Promise<V1Pod[]>;
}

/** Cluster API's pause annotation (DESIGN.md section 2). */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';

function decodeSecretData(secret: V1Secret): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    data[key] = Buffer.from(value, 'base64').toString('utf8');
  for (const [key, value] of Object.entries(secret.stringData ?? {})) data[key] = value;
  return data;
}

/** Names of the Secrets the spec's inputs reference (`variablesFrom`, `backend.secretRef`). */
function referencedSecretNames(spec: TargetSpec): string[] {
  const names = new Set<string>();
  for (const from of spec.variablesFrom ?? []) names.add(from.secretKeyRef.name);
  if (spec.backend?.secretRef) names.add(spec.backend.secretRef.name);
  return [...names].sort();
}

/**
 * SHA-256 over exactly the referenced keys (`variablesFrom`) and the whole backend Secret, so a rotated
 * Secret is an input change (src/core/inputs-hash.ts) while unrelated keys are not. Absent Secrets hash as
 * absent. The digest reveals nothing about the values.
 */
function referencedDataDigest(spec: TargetSpec, secrets: ReferencedSecrets): string | undefined {
  if (secrets.size === 0) return undefined;
  const picked = {
    variables: (spec.variablesFrom ?? []).map((from) => [
      from.name,
      secrets.get(from.secretKeyRef.name)?.[from.secretKeyRef.key] ?? null,
    ]),
    backend: spec.backend?.secretRef ? (secrets.get(spec.backend.secretRef.name) ?? null) : null,
  };
  return createHash('sha256').update(canonicalJson(picked)).digest('hex');
}

function parseStatus(kind: ObjectKind, raw: unknown): TargetStatus {
  const parsed = KIND_SCHEMAS[kind].status.safeParse(raw ?? {});
  // A status we cannot read (written by an older version) is rebuilt from the Jobs; never a reason to stop.
  return parsed.success ? parsed.data : {};
}

async function readOwningCluster(
  reader: KubeReader,
  ref: ObjectRef,
  clusterName: string,
): Promise<OwningCluster | undefined> {
  const clusters = await reader.listCustomObjects('TerraformCluster', {
    namespace: ref.namespace,
    labelSelector: { [LABELS.clusterName]: clusterName },
  });
  const [cluster] = clusters;
  if (!cluster) return undefined;
  const spec = TerraformClusterSpecSchema.safeParse(cluster.spec);
  const status = TerraformClusterStatusSchema.safeParse(cluster.status ?? {});
  return {
    name: cluster.metadata.name,
    ...(spec.success && spec.data.defaults?.jobs ? { defaultsJobs: spec.data.defaults.jobs } : {}),
    ready: status.success && status.data.ready === true,
  };
}

function capiPaused(cluster: CustomObject | undefined): boolean {
  const spec = cluster?.spec;
  return typeof spec === 'object' && spec !== null && Reflect.get(spec, 'paused') === true;
}

/**
 * Reads the snapshot; undefined when the object does not exist. Throws a KubeError on an API failure.
 * Requests: object, Jobs; plus the owning TerraformCluster and the Cluster API Cluster for objects with a
 * cluster label, the pending plan when one is referenced, each referenced Secret, and pods on first use.
 */
export async function readSnapshot(reader: KubeReader, ref: ObjectRef): Promise<Snapshot | undefined> {
  const object = await reader.getCustomObject(ref.kind, ref.namespace, ref.name);
  if (!object) return undefined;
  const { uid, resourceVersion } = object.metadata;
  const parsedSpec = KIND_SCHEMAS[ref.kind].spec.safeParse(object.spec);
  const spec = parsedSpec.success ? parsedSpec.data : undefined;
  const status = parseStatus(ref.kind, object.status);
  const clusterName = object.metadata.labels?.[LABELS.clusterName];
  const pendingPlanName = status.pendingPlanRef?.name;
  const secretNames = spec ? referencedSecretNames(spec) : [];

  const [jobs, owningCluster, capiCluster, pendingPlanObject, secrets] = await Promise.all([
    reader.listJobs({ namespace: ref.namespace, labelSelector: { [LABELS.ownerUid]: uid } }),
    clusterName !== undefined && ref.kind !== 'TerraformCluster'
      ? readOwningCluster(reader, ref, clusterName)
      : Promise.resolve(undefined),
    clusterName !== undefined
      ? reader.getCapiCluster(ref.namespace, clusterName)
      : Promise.resolve(undefined),
    pendingPlanName !== undefined
      ? reader.getCustomObject('TerraformPlan', ref.namespace, pendingPlanName)
      : Promise.resolve(undefined),
    Promise.all(secretNames.map((name) => reader.getSecret(ref.namespace, name))),
  ]);

  const referencedSecrets = new Map<string, Record<string, string> | undefined>();
  secretNames.forEach((name, index) => {
    const secret = secrets[index];
    referencedSecrets.set(name, secret ? decodeSecretData(secret) : undefined);
  });
  const plan = pendingPlanObject ? TerraformPlanSchema.safeParse(pendingPlanObject) : undefined;
  const records = jobs
    .map((job) => jobRecord(asJobView(job)))
    .filter((record): record is JobRecord => record !== undefined);

  let podsRead: Promise<V1Pod[]> | undefined;
  const pods = (): Promise<V1Pod[]> => {
    podsRead ??= reader.listPods({ namespace: ref.namespace, labelSelector: { [LABELS.ownerUid]: uid } });
    return podsRead;
  };

  return {
    ref,
    object,
    uid,
    generation: object.metadata.generation ?? 0,
    resourceVersion,
    spec,
    ...(parsedSpec.success ? {} : { specProblem: parsedSpec.error.issues[0]?.message ?? 'spec is invalid' }),
    status,
    ...(clusterName !== undefined ? { clusterName } : {}),
    ...(owningCluster ? { owningCluster } : {}),
    paused: object.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined || capiPaused(capiCluster),
    jobs,
    records,
    ...(plan?.success ? { pendingPlan: plan.data } : {}),
    referencedSecrets,
    inputsHash: spec ? inputsHash(inputsOf(spec, referencedDataDigest(spec, referencedSecrets))) : '',
    pods,
  };
}
