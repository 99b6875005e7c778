import { createHash } from 'node:crypto';
import type { V1Job, V1Secret } from '@kubernetes/client-node';
import type { z } from 'zod';
import type { CustomObject } from '../adapters/kube/custom-object.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import { type CapiClusterView, PAUSED_ANNOTATION } from '../core/cluster-api.ts';
import type { ClusterFacts, Fact } from '../core/cluster-facts.ts';
import { canonicalJson, inputsHash, inputsOf } from '../core/inputs-hash.ts';
import { LABELS } from '../core/job-labels.ts';
import { type JobRecord, jobRecord } from '../core/job-record.ts';
import { jobsListSkippable } from '../core/jobs-read.ts';
import { moduleInputsDigest, moduleInputsOf } from '../core/module-inputs.ts';
import { runSecretName } from '../core/names.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import type { OwningCluster, ReferencedSecrets, Snapshot } from '../core/snapshot.ts';
import { stateEncryptionRefs } from '../core/state-encryption.ts';
import {
  envSecretRefs,
  isVariablesSecret,
  type VariablesSecretOptIns,
  variablesFromRefs,
} from '../core/variables-opt-in.ts';
import type { JobView, PodView } from '../core/views.ts';
import { type JobsPolicy, resolveJobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import { TARGET_SCHEMAS } from '../schemas/kinds/registry.ts';
import { readStatus } from '../schemas/kinds/status-read.ts';
import type { TargetSpec } from '../schemas/kinds/target.ts';
import {
  TerraformClusterSpecSchema,
  TerraformClusterStatusSchema,
} from '../schemas/kinds/terraform-cluster.ts';
import { TerraformPlanSchema } from '../schemas/kinds/terraform-plan.ts';
import { type ClusterFactsCache, NO_CLUSTER_FACTS } from './cluster-facts.ts';
import { capiClusterViewOf, ownedByClusterApi, readCapiContext } from './read-capi.ts';
import { asJobView, asPodView } from './views.ts';

/**
 * The reads of a step (DESIGN.md section 5 step 2), live from the API server, never from an event
 * payload: the snapshot the planner starts from (the object and its Jobs, plus the owning TerraformCluster
 * and the Cluster API Cluster for objects with a cluster label, the pending plan when one is referenced,
 * each referenced Secret), and the facts the planner asks for only when it needs them (the object's pods,
 * a Job's per-run Secret). A machine's or pool's cluster facts come from the cache when it has them
 * (./cluster-facts.ts; the step reads them live again before anything but a wait, src/core/cluster-facts.ts).
 * Secret data is kept in memory only, never logged.
 */

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

/**
 * Names of the Secrets read for their opt-in label only: those `env[].valueFrom` reads in the Jobs policy
 * that results from these layers, and the key Secrets `spec.stateEncryption` names (the runner reads those,
 * src/core/state-encryption.ts).
 */
function envSecretNames(spec: TargetSpec, clusterDefaults: JobsPolicy | undefined): string[] {
  return [
    ...envSecretRefs(resolveJobsPolicy(spec.jobs, clusterDefaults).env).map((ref) => ref.secret),
    ...stateEncryptionRefs(spec.stateEncryption).map((ref) => ref.secret),
  ];
}

/**
 * The opt-in of each existing Secret variables are read from (`variablesFrom`, the effective env). Env
 * Secrets are read for their labels only; their data never leaves this function.
 */
function variablesSecretOptIns(
  spec: TargetSpec | undefined,
  envNames: readonly string[],
  secrets: ReadonlyMap<string, V1Secret | undefined>,
): VariablesSecretOptIns {
  const optIns = new Map<string, boolean>();
  if (!spec) return optIns;
  for (const name of [...variablesFromRefs(spec.variablesFrom).map((ref) => ref.secret), ...envNames]) {
    const secret = secrets.get(name);
    if (secret) optIns.set(name, isVariablesSecret(secret.metadata?.labels));
  }
  return optIns;
}

/** Where a zod issue is, as a person finds the field (`spec.variables.1bad`); never the value. */
function issuePath(issue: { path: readonly PropertyKey[] }, root: string): string {
  return [root, ...issue.path.map(String)].join('.');
}

/**
 * A TerraformCluster as its machines and pools read it. A spec or status that does not parse is named in
 * `unreadable`, never read as empty: its defaults and exports are inputs of the machine's runs, and without
 * them a machine would run with another Jobs policy and another inputs hash (an apply of changed inputs).
 */
export function owningClusterOf(cluster: CustomObject): OwningCluster {
  const spec = TerraformClusterSpecSchema.safeParse(cluster.spec);
  const status = readStatus(TerraformClusterStatusSchema, cluster.status);
  const unreadable = [
    ...(spec.success ? [] : spec.error.issues.map((issue) => issuePath(issue, 'spec'))),
    ...(status.kind === 'unreadable' ? status.paths.map((path) => `status.${path}`) : []),
  ];
  if (unreadable.length > 0) return { name: cluster.metadata.name, ready: false, unreadable };
  return {
    name: cluster.metadata.name,
    ...(spec.data?.defaults?.jobs ? { defaultsJobs: spec.data.defaults.jobs } : {}),
    ready: status.status.ready === true,
    ...(status.status.exports ? { exports: status.status.exports } : {}),
  };
}

/** The owning TerraformCluster (the first labelled with the cluster's name), live. */
async function readOwningCluster(
  reader: KubeReader,
  namespace: string,
  clusterName: string,
): Promise<Fact<OwningCluster>> {
  const [cluster] = await reader.listCustomObjects('TerraformCluster', {
    namespace,
    labelSelector: { [LABELS.clusterName]: clusterName },
  });
  return cluster
    ? { view: owningClusterOf(cluster), version: versionOf(cluster) }
    : { view: undefined, version: undefined };
}

/** The Cluster API Cluster of the cluster's name, live. */
async function readCapiCluster(
  reader: KubeReader,
  namespace: string,
  clusterName: string,
): Promise<Fact<CapiClusterView>> {
  const cluster = await reader.getCapiObject('Cluster', namespace, clusterName);
  return cluster
    ? { view: capiClusterViewOf(cluster), version: versionOf(cluster) }
    : { view: undefined, version: undefined };
}

function versionOf(object: CustomObject): Fact<unknown>['version'] {
  return { uid: object.metadata.uid, resourceVersion: object.metadata.resourceVersion };
}

/**
 * The cluster facts of an object with a cluster label: a machine's or pool's from the cache where it has
 * them, the rest live (and cached); a TerraformCluster's own Cluster API Cluster always live, cached with
 * the view its machines read of the TerraformCluster itself. `cached` says whether any part came from the
 * cache.
 */
async function readClusterFacts(
  reader: KubeReader,
  ref: ObjectRef,
  object: CustomObject,
  clusterName: string,
  cache: ClusterFactsCache,
): Promise<{ facts: Required<ClusterFacts>; cached: boolean }> {
  const own = ref.kind === 'TerraformCluster';
  const cachedFacts = own ? {} : await cache.read(ref.namespace, clusterName);
  const [owning, capi] = await Promise.all([
    own
      ? { view: owningClusterOf(object), version: versionOf(object) }
      : (cachedFacts.owning ?? readOwningCluster(reader, ref.namespace, clusterName)),
    cachedFacts.capi ?? readCapiCluster(reader, ref.namespace, clusterName),
  ]);
  await cache.remember(ref.namespace, clusterName, {
    ...(cachedFacts.owning ? {} : { owning }),
    ...(cachedFacts.capi ? {} : { capi }),
  });
  return {
    facts: { owning, capi },
    cached: cachedFacts.owning !== undefined || cachedFacts.capi !== undefined,
  };
}

/**
 * Reads the snapshot; undefined when the object does not exist. Throws a KubeError on an API failure.
 * Requests: object, Jobs (left out with `skipJobsAtRest` when the object shows nothing runs); plus the owning TerraformCluster and the Cluster API Cluster for objects with a
 * cluster label (those of a machine or pool only when `clusterFacts` has none cached), the pending plan when one is referenced, and each referenced Secret (the Secrets of a
 * cluster's default env that the object's own env does not name after the cluster is read).
 */
export async function readSnapshot(
  reader: KubeReader,
  ref: ObjectRef,
  options: SnapshotOptions = {},
): Promise<Snapshot | undefined> {
  const object = await reader.getCustomObject(ref.kind, ref.namespace, ref.name);
  if (!object) return undefined;
  const { uid, resourceVersion } = object.metadata;
  const parsedSpec = TARGET_SCHEMAS[ref.kind].spec.safeParse(object.spec);
  const spec = parsedSpec.success ? parsedSpec.data : undefined;
  const statusRead = readStatus(TARGET_SCHEMAS[ref.kind].status, object.status);
  const { status } = statusRead;
  const jobsUnread =
    options.skipJobsAtRest === true &&
    jobsListSkippable({
      meta: object.metadata,
      status,
      ...(statusRead.kind === 'unreadable' ? { statusUnreadable: statusRead.paths } : {}),
    });
  const clusterName = object.metadata.labels?.[LABELS.clusterName];
  const pendingPlanName = status.pendingPlanRef?.name;
  const secretNames = spec ? referencedSecretNames(spec) : [];
  // The object's own env is known now; a cluster's defaults only once the cluster is read (below).
  const firstNames = [...new Set([...secretNames, ...(spec ? envSecretNames(spec, undefined) : [])])];

  const clusterRead =
    clusterName !== undefined
      ? readClusterFacts(reader, ref, object, clusterName, options.clusterFacts ?? NO_CLUSTER_FACTS)
      : Promise.resolve(undefined);
  const capiClusterRead = clusterRead.then((read) => read?.facts.capi.view);
  const [jobs, clusterFacts, capiCluster, capi, pendingPlanObject, secrets] = await Promise.all([
    jobsUnread ? Promise.resolve([]) : listJobsOf(reader, ref.namespace, uid),
    clusterRead,
    capiClusterRead,
    readCapiContext(reader, ref, object, capiClusterRead),
    pendingPlanName !== undefined
      ? reader.getCustomObject('TerraformPlan', ref.namespace, pendingPlanName)
      : Promise.resolve(undefined),
    Promise.all(firstNames.map((name) => reader.getSecret(ref.namespace, name))),
  ]);

  const owningCluster = ref.kind === 'TerraformCluster' ? undefined : clusterFacts?.facts.owning.view;
  const read = new Map(firstNames.map((name, index) => [name, secrets[index]]));
  const envNames = spec ? envSecretNames(spec, owningCluster?.defaultsJobs) : [];
  const later = envNames.filter((name) => !read.has(name));
  const laterSecrets = await Promise.all(later.map((name) => reader.getSecret(ref.namespace, name)));
  later.forEach((name, index) => {
    read.set(name, laterSecrets[index]);
  });
  const referencedSecrets = new Map<string, Record<string, string> | undefined>();
  for (const name of secretNames) {
    const secret = read.get(name);
    referencedSecrets.set(name, secret ? decodeSecretData(secret) : undefined);
  }
  const plan = pendingPlanObject ? TerraformPlanSchema.safeParse(pendingPlanObject) : undefined;
  const { annotations, finalizers, deletionTimestamp } = object.metadata;

  return {
    ref,
    uid,
    generation: object.metadata.generation ?? 0,
    resourceVersion,
    meta: {
      ...(annotations ? { annotations } : {}),
      ...(finalizers ? { finalizers } : {}),
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
    },
    ...(object.metadata.managedFields !== undefined ? { managedFields: object.metadata.managedFields } : {}),
    spec,
    ...(parsedSpec.success ? {} : { specProblem: specProblemOf(parsedSpec.error.issues) }),
    status,
    ...(statusRead.kind === 'unreadable' ? { statusUnreadable: statusRead.paths } : {}),
    ...(clusterName !== undefined ? { clusterName } : {}),
    ...(owningCluster ? { owningCluster } : {}),
    ...(clusterFacts?.cached ? { clusterFactsCached: true as const } : {}),
    paused: annotations?.[PAUSED_ANNOTATION] !== undefined || capiCluster?.paused === true,
    ...(capi ? { capi } : {}),
    ...(ownedByClusterApi(object) ? { ownedByClusterApi: true } : {}),
    ...jobsOf(jobs),
    ...(jobsUnread ? { jobsUnread: true as const } : {}),
    ...(plan?.success ? { pendingPlan: plan.data } : {}),
    referencedSecrets,
    variablesSecretOptIns: variablesSecretOptIns(spec, envNames, read),
    inputsHash: spec
      ? inputsHash(
          inputsOf(
            spec,
            referencedDataDigest(spec, referencedSecrets),
            moduleInputsDigest(
              moduleInputsOf({
                ref,
                ...(clusterName !== undefined ? { clusterName } : {}),
                ...(capi ? { capi } : {}),
                ...(owningCluster?.exports ? { clusterExports: owningCluster.exports } : {}),
              }),
            ),
          ),
        )
      : '',
  };
}

/** How {@link readSnapshot} reads. */
export interface SnapshotOptions {
  /**
   * Leave the Job list out when the object shows nothing of it runs (src/core/jobs-read.ts); the planner
   * asks for it ({@link withJobs}) unless it rests idle. A step does, unless told to list
   * (`StepOptions.listJobs`); other readers (the kubectl plugin) list always.
   */
  skipJobsAtRest?: boolean;
  /**
   * The cluster facts cache (./cluster-facts.ts): where a machine's or pool's cluster facts are read first,
   * and where every live read of them is kept. Without it, every read is live and nothing is kept.
   */
  clusterFacts?: ClusterFactsCache;
}

function listJobsOf(reader: KubeReader, namespace: string, uid: string): Promise<V1Job[]> {
  return reader.listJobs({ namespace, labelSelector: { [LABELS.ownerUid]: uid } });
}

/** The Jobs as the snapshot holds them: their views and their records. */
function jobsOf(jobs: readonly V1Job[]): Pick<Snapshot, 'jobs' | 'records'> {
  const views: JobView[] = jobs.map(asJobView);
  return {
    jobs: views,
    records: views.map((job) => jobRecord(job)).filter((record): record is JobRecord => record !== undefined),
  };
}

/** The snapshot with its Jobs listed (one request): what the planner asks for when it needs them. */
export async function withJobs(reader: KubeReader, snap: Snapshot): Promise<Snapshot> {
  const { jobsUnread: _unread, ...rest } = snap;
  return { ...rest, ...jobsOf(await listJobsOf(reader, snap.ref.namespace, snap.uid)) };
}

/** The object's pods (label `captf.io/owner-uid`). */
export async function readPods(reader: KubeReader, snap: Snapshot): Promise<PodView[]> {
  const pods = await reader.listPods({
    namespace: snap.ref.namespace,
    labelSelector: { [LABELS.ownerUid]: snap.uid },
  });
  return pods.map(asPodView);
}

/** Whether a Job's per-run Secret exists. */
export async function runSecretExists(reader: KubeReader, namespace: string, job: string): Promise<boolean> {
  return (await reader.getSecret(namespace, runSecretName(job))) !== undefined;
}

/**
 * The first reason a spec does not parse, with the field a person edits (`spec.variables.1bad: …`): the
 * message alone, e.g. zod's "Invalid key in record", would not say where to look.
 */
function specProblemOf(issues: readonly z.core.$ZodIssue[]): string {
  const [issue] = issues;
  if (!issue) return 'spec is invalid';
  // A bad map key's reason is nested: the record's own message is only "Invalid key in record".
  const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  return `${issuePath(issue, 'spec')}: ${message}`;
}
