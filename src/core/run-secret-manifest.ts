import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { Backend } from '../schemas/kinds/spec.ts';
import type { StateEncryption } from '../schemas/kinds/state-encryption.ts';
import { type ApplyPolicy, RUN_CONFIG_FILE, type RunConfigInput } from '../schemas/run-config.ts';
import { type OwnerReference, ownerReference } from './job-manifest.ts';
import type { ModuleInputs } from './module-inputs.ts';
import { runSecretName } from './names.ts';
import { runLogTarget } from './run-log.ts';

/**
 * The per-run Secret `captf-run-<job>` (DESIGN.md section 9): the run config the runner reads from
 * `/captf/config`. Owned by its Job, so it goes when the Job goes; bookkeeping deletes it sooner.
 */

/** What the shell has resolved for one run; values from Secrets are already read. */
export interface RunConfigSource {
  /** The object's kind: which contract outputs the runner checks (src/schemas/contract-outputs.ts). */
  kind?: TargetKind;
  namespace: string;
  /** The kubernetes backend's `secret_suffix` (src/core/state-identity.ts): survives move and restore. */
  stateSuffix: string;
  /** `spec.variables`. */
  variables: Record<string, unknown>;
  /** Values of `spec.variablesFrom`, by variable name; they win over `variables` of the same name. */
  secretVariables: Record<string, unknown>;
  /** The module input contract (src/core/module-inputs.ts), handed over as `TF_VAR_<name>`. */
  contractInputs: ModuleInputs;
  backend: Backend | undefined;
  /** The keys of `spec.backend.secretRef`, read from the Secret; passed as secret backend config. */
  backendSecretData: Record<string, string>;
  /**
   * Cluster API owns the object (src/core/state-identity.ts): its kubernetes-backend state carries the label
   * `clusterctl.cluster.x-k8s.io/move`, so `clusterctl move` carries it along.
   */
  movesWithCluster?: boolean;
  /** The run's state encryption (src/core/state-encryption.ts `effectiveStateEncryption`); absent: none. */
  stateEncryption?: StateEncryption;
  lockTimeoutSeconds: number;
  applyPolicy: ApplyPolicy;
  /** The approved plan's digest (section 11), when the apply runs an approved plan. */
  expectedPlanDigest?: string;
  /** A stale lock id to force-unlock after init (section 12). */
  forceUnlockId?: string;
  /** A machine's `spec.providerID` once set: its plans may not change it (src/schemas/run-config.ts). */
  providerID?: string;
  /** A cluster's `spec.controlPlaneEndpoint` once set under Cluster API: its plans may not change it. */
  controlPlaneEndpoint?: { host: string; port: number };
  /** The per-object HMAC key of plan digests (section 11). */
  planHmacKey: string;
  /** `spec.outputs.secretName`: the Secret the outputs go to (issue 24 item 3), in the object's namespace. */
  outputsSecretName?: string;
}

/** The kubernetes backend's settings unless the spec sets them: the object's namespace and state suffix. */
function kubernetesBackendDefaults(
  source: Pick<RunConfigSource, 'namespace' | 'stateSuffix'>,
): Record<string, string | boolean> {
  return { secret_suffix: source.stateSuffix, namespace: source.namespace, in_cluster_config: true };
}

/** clusterctl moves a Secret carrying this label with the Cluster it moves (clusterctl's provider contract). */
export const CLUSTERCTL_MOVE_LABEL = 'clusterctl.cluster.x-k8s.io/move';

/**
 * The labels to add to an existing state Secret so that `clusterctl move` carries it with its Cluster
 * (issue 23 item 6): OpenTofu's kubernetes backend sets its `labels` only when it creates the Secret, and
 * the controller creates it empty before the first Job, so a Secret made before Cluster API set the
 * object's owner (the first apply may start first) lacks the label for good unless it is added. Undefined
 * when nothing is missing, or when the object does not move with a Cluster (a standalone object's state
 * stays: nothing pauses it during a move).
 */
export function stateMoveLabelPatch(
  labels: Readonly<Record<string, string>> | undefined,
  movesWithCluster: boolean,
): Record<string, string> | undefined {
  if (!movesWithCluster || labels?.[CLUSTERCTL_MOVE_LABEL] !== undefined) return undefined;
  return { [CLUSTERCTL_MOVE_LABEL]: '' };
}

/** Terraform's name for the state Secret of the `default` workspace of the kubernetes backend. */
const STATE_SECRET_PREFIX = 'tfstate-default-';

/**
 * Where the kubernetes backend keeps the object's state (`tfstate-default-<secret_suffix>`, with the
 * defaults of `buildRunConfig` under the spec's `backend.config`) and its `secret_suffix`; undefined for any
 * other backend, whose state no Secret size limit applies to.
 */
export function stateSecretOf(
  source: Pick<RunConfigSource, 'backend' | 'namespace' | 'stateSuffix'>,
): { namespace: string; name: string; suffix: string } | undefined {
  if ((source.backend?.type ?? 'kubernetes') !== 'kubernetes') return undefined;
  const config = { ...kubernetesBackendDefaults(source), ...source.backend?.config };
  const suffix = String(config.secret_suffix);
  return { namespace: String(config.namespace), name: `${STATE_SECRET_PREFIX}${suffix}`, suffix };
}

/** Where the runner reads the run's passphrases: the object's namespace, never another. */
function runStateEncryption(source: RunConfigSource): RunConfigInput['stateEncryption'] {
  const encryption = source.stateEncryption;
  if (encryption === undefined) return undefined;
  const fallback = encryption.fallback;
  const old = fallback?.passphraseSecretRef;
  return {
    namespace: source.namespace,
    passphrase: { name: encryption.passphraseSecretRef.name, key: encryption.passphraseSecretRef.key },
    ...(old !== undefined
      ? { fallback: { name: old.name, key: old.key } }
      : fallback?.unencrypted === true
        ? { fallback: 'unencrypted' as const }
        : {}),
  };
}

/**
 * The run config of one run. The default backend is Terraform's `kubernetes` backend in the object's
 * namespace with the object's state suffix (DESIGN.md section 2, src/core/state-identity.ts).
 */
export function buildRunConfig(source: RunConfigSource): RunConfigInput {
  const type = source.backend?.type ?? 'kubernetes';
  const defaults = type === 'kubernetes' ? kubernetesBackendDefaults(source) : {};
  return {
    version: 1,
    ...(source.kind ? { kind: source.kind } : {}),
    variables: { ...source.variables, ...source.secretVariables } as RunConfigInput['variables'],
    secretInputs: Object.keys(source.secretVariables).sort(),
    contractInputs: source.contractInputs.values as RunConfigInput['contractInputs'],
    sensitiveContractInputs: [...source.contractInputs.sensitive].sort(),
    backend: {
      type,
      config: { ...defaults, ...source.backend?.config, ...source.backendSecretData },
      secretKeys: Object.keys(source.backendSecretData).sort(),
      ...(type === 'kubernetes' && source.movesWithCluster
        ? { labels: { [CLUSTERCTL_MOVE_LABEL]: '' } }
        : {}),
    },
    ...(source.stateEncryption ? { stateEncryption: runStateEncryption(source) } : {}),
    lockTimeoutSeconds: source.lockTimeoutSeconds,
    applyPolicy: source.applyPolicy,
    ...(source.expectedPlanDigest ? { expectedPlanDigest: source.expectedPlanDigest } : {}),
    ...(source.forceUnlockId ? { forceUnlockId: source.forceUnlockId } : {}),
    ...(source.providerID ? { providerID: source.providerID } : {}),
    ...(source.controlPlaneEndpoint ? { controlPlaneEndpoint: source.controlPlaneEndpoint } : {}),
    planHmacKey: source.planHmacKey,
    ...(source.outputsSecretName
      ? { outputsSecret: { namespace: source.namespace, name: source.outputsSecretName } }
      : {}),
  };
}

/** core/v1 Secret, as far as we create it. */
export interface RunSecretManifest {
  apiVersion: 'v1';
  kind: 'Secret';
  type: 'Opaque';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    ownerReferences: OwnerReference[];
  };
  stringData: Record<string, string>;
}

/**
 * The per-run Secret of a created Job (the Job's UID is known only after its create), its run config naming
 * the run log Secret the runner writes (src/core/run-log.ts). Carries the Job's
 * labels, so whose it is shows without a read of the Job; its owner reference lets the garbage collector
 * delete it with the Job (or when the Job is gone before it was created).
 */
export function buildRunSecret(input: {
  job: {
    name: string;
    namespace: string;
    uid: string;
    labels: Record<string, string>;
    ownerReferences: readonly OwnerReference[];
  };
  config: RunConfigInput;
}): RunSecretManifest {
  // The log target comes from the created Job: its name, labels and owner are known only now.
  const runLog = runLogTarget(input.job);
  const config = runLog === undefined ? input.config : { ...input.config, runLog };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: runSecretName(input.job.name),
      namespace: input.job.namespace,
      labels: input.job.labels,
      ownerReferences: [
        // Not blocking: a Job's deletion need not wait for its Secret, and blocking would need `update` on
        // jobs/finalizers wherever owner-reference permissions are enforced.
        ownerReference(
          { apiVersion: 'batch/v1', kind: 'Job', name: input.job.name, uid: input.job.uid },
          { blockOwnerDeletion: false },
        ),
      ],
    },
    stringData: { [RUN_CONFIG_FILE]: JSON.stringify(config) },
  };
}
