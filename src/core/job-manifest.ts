import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { EffectiveJobsPolicy, EnvVar, Quantity, Toleration } from '../schemas/kinds/jobs-policy.ts';
import type { Op } from '../schemas/result.ts';
import { SOURCE_CONTAINER } from './classify.ts';
import { ANNOTATIONS, LABELS } from './job-labels.ts';
import { runSecretName } from './names.ts';

/**
 * The Job of one run (DESIGN.md section 9), as a pure builder: same input, same manifest, so a retry after a
 * crash recreates exactly what the first attempt would have.
 */

/** Where the init container puts the runner (an emptyDir shared with `source`). */
export const RUNNER_BIN_DIR = '/captf/bin';
/** Where the per-run Secret is mounted, read-only. */
export const RUN_CONFIG_DIR = '/captf/config';
/** Scratch space of the runner: the module image may have no writable file system. */
export const RUNNER_WORK_DIR = '/captf/work';
/** The image contract's module and runtime (DESIGN.md section 10, docs/image-contract.md). */
const MODULE_DIR = '/captf/module';
const RUNTIME_PATH = '/captf/runtime';
/** The kubelet's default `terminationMessagePath`, where the runner writes its result. */
const RESULT_FILE = '/dev/termination-log';
/** 600 s: Terraform finishes the in-flight provider call and writes state after SIGTERM (section 10). */
export const TERMINATION_GRACE_SECONDS = 600;
/** The runner's own files in RUNNER_BIN_DIR (src/runner/copy.ts): itself, its loader, its libraries. */
const RUNNER = `${RUNNER_BIN_DIR}/runner`;
const LOADER = `${RUNNER_BIN_DIR}/ld.so`;
const LIBS = `${RUNNER_BIN_DIR}/lib`;

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
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      spec: {
        restartPolicy: 'Never';
        terminationGracePeriodSeconds: number;
        serviceAccountName?: string;
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
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}

/** The object a Job runs for. */
export interface JobOwner {
  apiVersion: string;
  kind: TargetKind;
  name: string;
  namespace: string;
  uid: string;
  generation: number;
  /** The Cluster API cluster (label `cluster.x-k8s.io/cluster-name`). */
  clusterName: string;
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
}

/** The labels of a Job, its pods and its per-run Secret (section 9); events map them to the owner. */
export function jobLabels(owner: JobOwner, op: Op, attempt: number): Record<string, string> {
  return {
    [LABELS.managed]: 'true',
    [LABELS.ownerKind]: owner.kind,
    [LABELS.ownerName]: owner.name,
    [LABELS.ownerUid]: owner.uid,
    [LABELS.op]: op,
    [LABELS.attempt]: String(attempt),
    [LABELS.clusterName]: owner.clusterName,
  };
}

/** The owner reference to an object: the controller owner, so the garbage collector removes its Jobs. */
export function ownerReference(owner: {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The Job of one run (DESIGN.md section 9): `backoffLimit: 0` (a retry is our decision, not the Job
 * controller's), `restartPolicy: Never`, no TTL (bookkeeping reads the Job and pruning deletes it), the
 * deadline from the policy, 600 s grace; init container `runner` copies the runner into `/captf/bin`,
 * container `source` (the module image) runs it with the per-run Secret at `/captf/config`.
 */
export function buildJobManifest(input: JobManifestInput): JobManifest {
  const { owner, policy } = input;
  const labels = jobLabels(owner, input.op, input.attempt);
  const annotations = {
    [ANNOTATIONS.inputsHash]: input.inputsHash,
    [ANNOTATIONS.generation]: String(owner.generation),
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
        metadata: { labels, annotations },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          ...(policy.serviceAccountName ? { serviceAccountName: policy.serviceAccountName } : {}),
          imagePullSecrets: policy.imagePullSecrets,
          nodeSelector: policy.nodeSelector,
          tolerations: policy.tolerations,
          initContainers: [
            {
              name: 'runner',
              image: input.runnerImage,
              args: ['copy', RUNNER_BIN_DIR],
              terminationMessagePolicy: 'File',
              volumeMounts: [binMount],
            },
          ],
          containers: [
            {
              name: SOURCE_CONTAINER,
              image: input.image,
              // The module image needs no shell and no loader of its own (section 10): the runner brings both.
              command: [LOADER, '--library-path', LIBS, RUNNER],
              // Every path is named, even the runner's defaults (the image contract, section 10): a node
              // without mount namespaces (the local node) maps only the paths it sees on the command line.
              args: [
                'run',
                `--op=${input.op}`,
                `--module-dir=${MODULE_DIR}`,
                `--runtime=${RUNTIME_PATH}`,
                `--config-dir=${RUN_CONFIG_DIR}`,
                `--work-dir=${RUNNER_WORK_DIR}`,
                `--result-file=${RESULT_FILE}`,
              ],
              env: policy.env,
              resources: policy.resources,
              terminationMessagePolicy: 'File',
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
            // 0o400: the run config holds variables from Secrets; only the runner's user reads it.
            { name: 'captf-config', secret: { secretName: runSecretName(input.name), defaultMode: 0o400 } },
          ],
        },
      },
    },
  };
}
