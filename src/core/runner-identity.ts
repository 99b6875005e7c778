import { createHash } from 'node:crypto';
import type { TargetKind } from '../schemas/kinds/api-group.ts';
import { RUNNER_IDENTITY_PREFIX } from '../schemas/kinds/rules.ts';
import { canonicalJson } from './canonical-json.ts';
import { LABELS } from './job-labels.ts';
import { type OwnerReference, ownerReference } from './job-manifest.ts';
import { CLUSTERCTL_MOVE_LABEL, type RunConfigSource, stateSecretOf } from './run-secret-manifest.ts';
import { stateEncryptionSecretNames } from './state-encryption.ts';

/**
 * The runner identity of one object (issue 16 item 3, DESIGN.md section 15): a ServiceAccount of its own,
 * and a Role whose rules name, by `resourceNames`, only that object's Terraform state Secret and lock Lease.
 * A runner pod of object A — its module, its providers — can then neither read nor change object B's state,
 * lock, per-run Secret or plan key in the same namespace, which a namespace-wide runner Role allowed.
 *
 * RBAC cannot restrict `create` by name, so the controller creates the state Secret (empty: OpenTofu's
 * kubernetes backend reads a Secret without a `tfstate` key as no state) and the Lease (no holder: the
 * backend's Lock takes a free Lease with an update) before the first Job; the runner then needs `get` and
 * `update` only. The backend's one list (`tofu init` lists the workspaces' Secrets) goes through the
 * runner's loopback proxy, which answers it with a read of the one Secret (src/runner/kube-proxy.ts).
 *
 * The Job of an object whose spec names `jobs.serviceAccountName` runs as that account instead: the cluster
 * admin bounds which accounts are allowed (infra/admission/run-policy.yaml) and grants them what they need.
 */

/** The ServiceAccount, Role and RoleBinding name of the object whose state is named `stateSuffix`. */
export function runnerIdentityName(stateSuffix: string): string {
  return `${RUNNER_IDENTITY_PREFIX}${stateSuffix}`;
}

/** The annotation on the RoleBinding that records the digest of the identity it completes. */
export const RUNNER_IDENTITY_ANNOTATION = 'captf.io/runner-identity';

/** OpenTofu's labels on a kubernetes-backend state Secret and Lease (its client.go getLabels). */
function backendLabels(suffix: string, movesWithCluster: boolean): Record<string, string> {
  return {
    tfstate: 'true',
    tfstateSecretSuffix: suffix,
    tfstateWorkspace: 'default',
    'app.kubernetes.io/managed-by': 'terraform',
    // clusterctl move carries the state (and its lock) with the Cluster (src/core/run-secret-manifest.ts).
    ...(movesWithCluster ? { [CLUSTERCTL_MOVE_LABEL]: '' } : {}),
  };
}

interface Metadata {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

/** One RBAC rule, as the Role carries it. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  verbs: string[];
}

/** Everything one object's runner identity consists of, in the order the shell creates it. */
export interface RunnerIdentity {
  serviceAccount: { apiVersion: 'v1'; kind: 'ServiceAccount'; metadata: Metadata };
  /** The empty state Secret, when the object's state lives in a kubernetes backend. */
  stateSecret?: {
    apiVersion: 'v1';
    kind: 'Secret';
    type: 'Opaque';
    metadata: Metadata & { annotations: Record<string, string> };
  };
  /** The free lock Lease, beside the state Secret. */
  lockLease?: {
    apiVersion: 'coordination.k8s.io/v1';
    kind: 'Lease';
    metadata: Metadata;
    spec: Record<string, never>;
  };
  role: { apiVersion: 'rbac.authorization.k8s.io/v1'; kind: 'Role'; metadata: Metadata; rules: PolicyRule[] };
  /** Created last: its annotation {@link RUNNER_IDENTITY_ANNOTATION} says all the rest is in place. */
  roleBinding: {
    apiVersion: 'rbac.authorization.k8s.io/v1';
    kind: 'RoleBinding';
    metadata: Metadata & { annotations: Record<string, string> };
    roleRef: { apiGroup: 'rbac.authorization.k8s.io'; kind: 'Role'; name: string };
    subjects: { kind: 'ServiceAccount'; name: string; namespace: string }[];
  };
}

/** What the identity is built from. */
export interface RunnerIdentityInput {
  owner: { apiVersion: string; kind: TargetKind; name: string; namespace: string; uid: string };
  /** The run's config source: the backend's type, the state suffix, whether the state moves with the Cluster. */
  source: Pick<
    RunConfigSource,
    'backend' | 'namespace' | 'stateSuffix' | 'movesWithCluster' | 'stateEncryption' | 'outputsSecretName'
  >;
}

/**
 * The object's runner identity, all in the object's namespace and owned by it, except the state Secret and
 * Lease: the state must outlive anything the garbage collector removes, so the Secret is never owned, and
 * the Lease is owned by the Secret once created ({@link leaseOwnedByState}). The Role
 * names the state the object's own suffix names, whatever `spec.backend.config` says: a spec that points
 * `secret_suffix` or `namespace` elsewhere (at another object's state) gets no right to it, and its runs
 * fail with the API server's Forbidden until its Jobs run as an account the admin granted that state
 * (`spec.jobs.serviceAccountName`). Another backend than `kubernetes` gets no state rules: its runner
 * reads no state here. With state encryption the Role also lets the runner `get` exactly its passphrase
 * Secret and its fallback's (never `update`, never any other), whatever the backend. A spec that names an
 * outputs Secret (`spec.outputs.secretName`) adds one rule: `get` and `update` of that Secret. Every Role
 * lets the runner `create` and `delete` Secrets, which admission narrows to its own run log.
 */
export function buildRunnerIdentity(input: RunnerIdentityInput): RunnerIdentity {
  const { owner, source } = input;
  const name = runnerIdentityName(source.stateSuffix);
  const kubernetes = (source.backend?.type ?? 'kubernetes') === 'kubernetes';
  const state = kubernetes
    ? stateSecretOf({ backend: undefined, namespace: owner.namespace, stateSuffix: source.stateSuffix })
    : undefined;
  const owned = { ownerReferences: [ownerReference(owner, { blockOwnerDeletion: false })] };
  const labels = {
    [LABELS.ownerKind]: owner.kind,
    [LABELS.ownerName]: owner.name,
    [LABELS.ownerUid]: owner.uid,
  };
  const serviceAccount = {
    apiVersion: 'v1' as const,
    kind: 'ServiceAccount' as const,
    metadata: { name, namespace: owner.namespace, labels, ...owned },
  };
  const lockName = state ? `lock-${state.name}` : undefined;
  const stateRules: PolicyRule[] =
    state && lockName
      ? [
          { apiGroups: [''], resources: ['secrets'], resourceNames: [state.name], verbs: ['get', 'update'] },
          {
            apiGroups: ['coordination.k8s.io'],
            resources: ['leases'],
            resourceNames: [lockName],
            verbs: ['get', 'update'],
          },
        ]
      : [];
  // The state Secret is never a key Secret: a passphrase kept beside the state it opens would protect nothing.
  const keySecrets = stateEncryptionSecretNames(source.stateEncryption)
    .filter((secret) => secret !== state?.name)
    .sort();
  const keyRules: PolicyRule[] =
    keySecrets.length > 0
      ? [{ apiGroups: [''], resources: ['secrets'], resourceNames: keySecrets, verbs: ['get'] }]
      : [];
  // The outputs Secret, whatever the backend: `get` and `update` of that one name, which the controller
  // created empty and owned by the object before the Job (src/core/outputs-secret.ts).
  const outputsRules: PolicyRule[] = source.outputsSecretName
    ? [
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: [source.outputsSecretName],
          verbs: ['get', 'update'],
        },
      ]
    : [];
  // The run log (src/core/run-log.ts): RBAC cannot bind a create to a name, so the rule names none; admission
  // holds a runner identity's Secret create and delete to its own Job's `captf-log-<job>`, the Job read from
  // its pod-bound token (infra/admission/runner-secret-writes-policy.yaml).
  const runLogRules: PolicyRule[] = [
    { apiGroups: [''], resources: ['secrets'], resourceNames: [], verbs: ['create', 'delete'] },
  ];
  const rules = [...stateRules, ...keyRules, ...outputsRules, ...runLogRules];
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1' as const,
    kind: 'Role' as const,
    metadata: { name, namespace: owner.namespace, labels, ...owned },
    rules,
  };
  const stateObjects =
    state && lockName
      ? {
          stateSecret: {
            apiVersion: 'v1' as const,
            kind: 'Secret' as const,
            type: 'Opaque' as const,
            metadata: {
              name: state.name,
              namespace: state.namespace,
              labels: backendLabels(state.suffix, source.movesWithCluster === true),
              // OpenTofu writes gzip-compressed state and marks its Secrets so.
              annotations: { encoding: 'gzip' },
            },
          },
          lockLease: {
            apiVersion: 'coordination.k8s.io/v1' as const,
            kind: 'Lease' as const,
            metadata: {
              name: lockName,
              namespace: state.namespace,
              labels: backendLabels(state.suffix, source.movesWithCluster === true),
            },
            spec: {},
          },
        }
      : {};
  const bindingBody = {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io' as const, kind: 'Role' as const, name },
    subjects: [{ kind: 'ServiceAccount' as const, name, namespace: owner.namespace }],
  };
  const digest = createHash('sha256')
    .update(canonicalJson({ serviceAccount, role, ...stateObjects, bindingBody }))
    .digest('hex')
    .slice(0, 16);
  return {
    serviceAccount,
    ...stateObjects,
    role,
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: {
        name,
        namespace: owner.namespace,
        labels,
        annotations: { [RUNNER_IDENTITY_ANNOTATION]: digest },
        ...owned,
      },
      ...bindingBody,
    },
  };
}

/** The lock Lease of an identity. */
export type LockLease = NonNullable<RunnerIdentity['lockLease']>;

/**
 * The lock Lease owned by its state Secret (`uid`: the Secret's, as created or read; undefined when there is
 * none, and the Lease is then unowned). The garbage collector removes the Lease whenever its Secret goes:
 * `clusterctl move` deletes the source's Secret (it moves Secrets, never Leases), a person deletes it, or
 * the finalize step does; no Lease outlives its state. The Secret stays unowned and outlives its object.
 */
export function leaseOwnedByState(
  lease: LockLease,
  state: { name: string; uid: string | undefined },
): LockLease {
  if (state.uid === undefined) return lease;
  const owner: OwnerReference = {
    apiVersion: 'v1',
    kind: 'Secret',
    name: state.name,
    uid: state.uid,
    controller: false,
    blockOwnerDeletion: false,
  };
  return { ...lease, metadata: { ...lease.metadata, ownerReferences: [owner] } };
}

/** Whether a RoleBinding read from the API server completes `identity` (one read decides; no other). */
export function isRunnerIdentityInPlace(
  identity: RunnerIdentity,
  binding: { metadata?: { annotations?: Record<string, string> } } | undefined,
): boolean {
  const want = identity.roleBinding.metadata.annotations[RUNNER_IDENTITY_ANNOTATION];
  return binding?.metadata?.annotations?.[RUNNER_IDENTITY_ANNOTATION] === want;
}

/**
 * The service account a Job runs as: the one the spec names (`jobs.serviceAccountName`, no identity to put
 * in place), else the object's own runner identity.
 */
export function runnerAccountOf(
  named: string | undefined,
  input: RunnerIdentityInput,
): { serviceAccountName: string; identity?: RunnerIdentity } {
  if (named !== undefined && named !== '') return { serviceAccountName: named };
  const identity = buildRunnerIdentity(input);
  return { serviceAccountName: identity.serviceAccount.metadata.name, identity };
}

/** How long a remembered identity check holds (s): past it, the next Job-creating step reads again. */
export const IDENTITY_CHECK_TTL_SECONDS = 24 * 3600;

/** The digest of everything an identity consists of, as its RoleBinding carries it. */
export function runnerIdentityDigest(identity: RunnerIdentity): string {
  return identity.roleBinding.metadata.annotations[RUNNER_IDENTITY_ANNOTATION] ?? '';
}

/**
 * Whether a Job-creating step may take the identity as complete without reading it (DESIGN.md section 15,
 * "the runner identity"): the check remembered for the object (`remembered`: the digest of the identity
 * last found complete, undefined when none is remembered or Redis did not answer) is of this very identity.
 * The RoleBinding and the Lease are then not read; a state Secret put back still costs its create, and the
 * Lease it may have taken with it (src/step/runner-identity.ts). Pure.
 */
export function identityVerified(remembered: string | undefined, identity: RunnerIdentity): boolean {
  return remembered !== undefined && remembered === runnerIdentityDigest(identity);
}

/**
 * Whether bookkeeping forgets the object's remembered check: a bookkept run that did not succeed (a
 * failure, a deadline, an interruption, a plan that waits), so a RoleBinding or Lease someone deleted (the
 * runner then fails with Forbidden) is read and put back at the next start, and a failed run never repeats
 * for a check that is out of date. Pure.
 */
export function forgetsIdentityCheck(runs: readonly { success: boolean }[]): boolean {
  return runs.some((run) => !run.success);
}
