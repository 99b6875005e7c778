import {
  JOB_RUN_AS_USER,
  LIB_DIR,
  LOADER_FILE,
  MODULE_DIR,
  RESULT_FILE,
  RUN_CONFIG_DIR,
  RUN_CONFIG_FILE_MODE,
  RUN_CONFIG_FS_GROUP,
  RUNNER_BIN_DIR,
  RUNNER_FILE,
  RUNNER_WORK_DIR,
  RUNTIME_PATH,
  SERVICE_ACCOUNT_DIR,
  STOP_TIMEOUT_SECONDS,
  TERMINATION_GRACE_SECONDS,
} from '../schemas/job-contract.ts';
import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { EffectiveJobsPolicy, EnvVar, Quantity, Toleration } from '../schemas/kinds/jobs-policy.ts';
import type { Op } from '../schemas/result.ts';
import { SOURCE_CONTAINER } from './classify.ts';
import { ANNOTATIONS, LABELS, ownerLabels, POD_RESULT_FINALIZER } from './job-labels.ts';
import { runSecretName } from './names.ts';

/**
 * The Job of one run (DESIGN.md section 9), as a pure builder: same input, same manifest, so a retry after a
 * crash recreates exactly what the first attempt would have.
 */

/** The Job/runner contract lives in src/schemas/job-contract.ts; the step imports the grace from here. */
export { TERMINATION_GRACE_SECONDS };

/** The runner's own files in RUNNER_BIN_DIR (`runner copy`): itself, its loader, its libraries. */
const RUNNER = `${RUNNER_BIN_DIR}/${RUNNER_FILE}`;
const LOADER = `${RUNNER_BIN_DIR}/${LOADER_FILE}`;
const LIBS = `${RUNNER_BIN_DIR}/${LIB_DIR}`;

/** A reference to the object that owns something. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
  blockOwnerDeletion: boolean;
}

/** batch/v1 Job, as far as we create it. */
export interface JobManifest {
  apiVersion: 'batch/v1';
  kind: 'Job';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences: OwnerReference[];
  };
  spec: {
    backoffLimit: 0;
    activeDeadlineSeconds: number;
    template: {
      metadata: { labels: Record<string, string>; annotations: Record<string, string>; finalizers: string[] };
      spec: {
        restartPolicy: 'Never';
        activeDeadlineSeconds: number;
        terminationGracePeriodSeconds: number;
        securityContext: PodSecurityContext;
        serviceAccountName: string;
        imagePullSecrets: { name: string }[];
        nodeSelector: Record<string, string>;
        tolerations: Toleration[];
        initContainers: ContainerManifest[];
        containers: ContainerManifest[];
        volumes: (
          | { name: string; emptyDir: Record<string, never> }
          | { name: string; secret: { secretName: string; defaultMode: number } }
        )[];
      };
    };
  };
}

export interface ContainerManifest {
  name: string;
  image: string;
  command?: string[];
  args: string[];
  env?: EnvVar[];
  resources?: { requests: Record<string, Quantity>; limits: Record<string, Quantity> };
  terminationMessagePolicy: 'File';
  securityContext: ContainerSecurityContext;
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}

/** The pod-level security context of a Job pod (the Pod Security `restricted` standard's pod fields). */
export interface PodSecurityContext {
  runAsNonRoot: true;
  runAsUser: number;
  runAsGroup: number;
  fsGroup: number;
  seccompProfile: { type: 'RuntimeDefault' };
}

/**
 * The container-level security context: the `restricted` fields that exist only per container, and a
 * read-only root filesystem (the runner writes only to its emptyDirs and the termination message).
 */
export interface ContainerSecurityContext {
  allowPrivilegeEscalation: false;
  capabilities: { drop: ['ALL'] };
  readOnlyRootFilesystem: true;
}

/**
 * The pod's security context: the `restricted` Pod Security Standard (non-root, runtime default seccomp)
 * with the run config's fsGroup. Both containers run as JOB_RUN_AS_USER whatever the image's `USER`.
 */
export function jobPodSecurityContext(): PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: JOB_RUN_AS_USER,
    runAsGroup: JOB_RUN_AS_USER,
    // The run config is group-readable by this group, and the kubelet adds it to every container's groups.
    fsGroup: RUN_CONFIG_FS_GROUP,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** Every container's security context: `restricted` sets these per container, not per pod. */
export function jobContainerSecurityContext(): ContainerSecurityContext {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true };
}

/** The object a Job runs for. */
export interface JobOwner {
  apiVersion: string;
  kind: TargetKind;
  name: string;
  namespace: string;
  uid: string;
  generation: number;
  /** The Cluster API cluster (label `cluster.x-k8s.io/cluster-name`); '' or absent: none. */
  clusterName?: string;
}

export interface JobManifestInput {
  owner: JobOwner;
  /** From `jobName` (src/core/names.ts). */
  name: string;
  op: Op;
  attempt: number;
  inputsHash: string;
  /** The module image: the pinned digest for every op but apply (DESIGN.md section 2). */
  image: string;
  /** The controller's `--runner-image`; its entrypoint is the runner. */
  runnerImage: string;
  policy: EffectiveJobsPolicy;
  /**
   * The pod's service account: the spec's `jobs.serviceAccountName`, else the object's own runner identity
   * (src/core/runner-identity.ts).
   */
  serviceAccountName: string;
  /** The state suffix of the run (annotation `captf.io/state-suffix`). */
  stateSuffix?: string;
}

/** The labels of a Job, its pods and its per-run Secret (section 9); events map them to the owner. */
export function jobLabels(owner: JobOwner, op: Op, attempt: number): Record<string, string> {
  return { ...ownerLabels(owner), [LABELS.op]: op, [LABELS.attempt]: String(attempt) };
}

/**
 * The owner reference to an object: the controller owner, so the garbage collector removes its Jobs.
 * `blockOwnerDeletion` (default true) needs `update` on the owner's `finalizers` subresource where the
 * OwnerReferencesPermissionEnforcement admission plugin runs (e.g. OpenShift); pass false when the owner's
 * foreground deletion need not wait for the dependent.
 */
export function ownerReference(
  owner: { apiVersion: string; kind: string; name: string; uid: string },
  options: { blockOwnerDeletion?: boolean } = {},
): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: options.blockOwnerDeletion ?? true,
  };
}

/**
 * The Job of one run (DESIGN.md section 9): `backoffLimit: 0` (a retry is our decision, not the Job
 * controller's), `restartPolicy: Never`, no TTL (bookkeeping reads the Job and pruning deletes it), the
 * deadline from the policy (for the Job and its pod), 600 s grace, the `restricted` Pod Security Standard
 * (issue 16); init container `runner` copies the runner into `/captf/bin`, container `source` (the module
 * image) runs it with the per-run Secret at `/captf/config` (mode 0440, group `fsGroup`) and a stop timeout
 * derived from the grace (src/schemas/job-contract.ts).
 */
export function buildJobManifest(input: JobManifestInput): JobManifest {
  const { owner, policy } = input;
  const labels = jobLabels(owner, input.op, input.attempt);
  const annotations = {
    [ANNOTATIONS.inputsHash]: input.inputsHash,
    [ANNOTATIONS.generation]: String(owner.generation),
    ...(input.stateSuffix !== undefined ? { [ANNOTATIONS.stateSuffix]: input.stateSuffix } : {}),
  };
  const binMount = { name: 'captf-bin', mountPath: RUNNER_BIN_DIR };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: input.name,
      namespace: owner.namespace,
      labels,
      annotations,
      ownerReferences: [ownerReference(owner)],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: policy.activeDeadlineSeconds,
      template: {
        // The pods keep the runner's result until bookkeeping read it, even when deleted first (C07, C09).
        metadata: { labels, annotations, finalizers: [POD_RESULT_FINALIZER] },
        spec: {
          restartPolicy: 'Never',
          // The Job's deadline once more, for the pod: a Job deleted with orphaning leaves its pod running
          // with no Job to end it (src/core/orphaned-pods.ts), and the API guard waits for it. Counted from
          // the pod's start, never before the Job's, so while the Job exists its own deadline comes first.
          activeDeadlineSeconds: policy.activeDeadlineSeconds,
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          // Pod Security `restricted` (issue 16): admitted in namespaces that enforce it.
          securityContext: jobPodSecurityContext(),
          serviceAccountName: input.serviceAccountName,
          imagePullSecrets: policy.imagePullSecrets,
          nodeSelector: policy.nodeSelector,
          tolerations: policy.tolerations,
          initContainers: [
            {
              name: 'runner',
              image: input.runnerImage,
              args: ['copy', RUNNER_BIN_DIR],
              terminationMessagePolicy: 'File',
              securityContext: jobContainerSecurityContext(),
              volumeMounts: [binMount],
            },
          ],
          containers: [
            {
              name: SOURCE_CONTAINER,
              image: input.image,
              // The module image needs no shell and no loader of its own (section 10): the runner brings both.
              command: [LOADER, '--library-path', LIBS, RUNNER],
              // Every path is named, even the runner's defaults (the image contract, section 10): the Job
              // spec alone says where the pod reads and writes, whatever runner version the image holds.
              args: [
                'run',
                `--op=${input.op}`,
                `--module-dir=${MODULE_DIR}`,
                `--runtime=${RUNTIME_PATH}`,
                `--config-dir=${RUN_CONFIG_DIR}`,
                `--work-dir=${RUNNER_WORK_DIR}`,
                `--result-file=${RESULT_FILE}`,
                // The token the kubernetes backend reaches the state with (src/runner/kube-proxy.ts).
                `--service-account-dir=${SERVICE_ACCOUNT_DIR}`,
                // Derived from the same grace as terminationGracePeriodSeconds (section 10).
                `--stop-timeout=${STOP_TIMEOUT_SECONDS}`,
              ],
              env: policy.env,
              resources: policy.resources,
              terminationMessagePolicy: 'File',
              securityContext: jobContainerSecurityContext(),
              volumeMounts: [
                { ...binMount, readOnly: true },
                { name: 'captf-config', mountPath: RUN_CONFIG_DIR, readOnly: true },
                { name: 'captf-work', mountPath: RUNNER_WORK_DIR },
              ],
            },
          ],
          volumes: [
            { name: 'captf-bin', emptyDir: {} },
            { name: 'captf-work', emptyDir: {} },
            // 0o440 with the pod's fsGroup: the run config holds variables from Secrets; the container's user
            // (any UID, the fsGroup among its groups) reads it, nobody writes it.
            {
              name: 'captf-config',
              secret: { secretName: runSecretName(input.name), defaultMode: RUN_CONFIG_FILE_MODE },
            },
          ],
        },
      },
    },
  };
}
