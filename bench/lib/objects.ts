import { ANNOTATIONS } from '../../src/core/job-labels.ts';
import { buildJobManifest } from '../../src/core/job-manifest.ts';
import type { JobView, PodView } from '../../src/core/views.ts';
import { resolveJobsPolicy } from '../../src/schemas/kinds/jobs-policy.ts';
import type { Op, RunnerResult } from '../../src/schemas/result.ts';

/**
 * Realistic API objects for the benches, shaped as the API server returns them (server-set metadata,
 * managedFields, defaulted Job fields, conditions): a TerraformMachine, its retained Jobs and a finished
 * pod with a runner result in its termination message. Times are fixed relative to BENCH_NOW.
 */

export const BENCH_NOW = new Date('2026-11-29T12:00:00.000Z');
export const API_VERSION = 'infrastructure.cluster.x-k8s.io/v1alpha1';
export const NAMESPACE = 'team-a';
export const MACHINE_NAME = 'workers-eu-west-1a-7';
export const MACHINE_UID = '6f1d3c2a-5b8e-4a0f-9d7c-1e2b3a4c5d6e';
export const INPUTS_HASH = 'a3f1c9e07b5d24681f0e9c8b7a6d5e4f3c2b1a0998877665544332211ffeeddc';

/** `BENCH_NOW - seconds`, as RFC 3339 text. */
export function ago(seconds: number): string {
  return new Date(BENCH_NOW.getTime() - seconds * 1000).toISOString();
}

function managedField(manager: string, subresource?: string) {
  return {
    manager,
    operation: 'Update',
    apiVersion: API_VERSION,
    time: ago(600),
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': { 'f:labels': { '.': {}, 'f:cluster.x-k8s.io/cluster-name': {} } },
      'f:spec': { '.': {}, 'f:source': { '.': {}, 'f:image': {} }, 'f:variables': { '.': {} } },
    },
    ...(subresource ? { subresource } : {}),
  };
}

/** The spec's variables: a typical machine's, with `user_data` padded by `paddingBytes` of cloud-init. */
function variables(paddingBytes: number): Record<string, unknown> {
  return {
    name: MACHINE_NAME,
    instance_type: 'm6i.xlarge',
    subnet_id: 'subnet-0a1b2c3d4e5f60718',
    security_group_ids: ['sg-0123456789abcdef0', 'sg-0fedcba9876543210'],
    root_volume: { size_gb: 100, type: 'gp3', encrypted: true },
    tags: { team: 'platform', env: 'prod', cost_center: 'cc-4711', cluster: 'workers-eu' },
    ssh_authorized_keys: [
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx7bench0000000000000000000000000 ops@example',
    ],
    user_data: `#cloud-config\nwrite_files:\n${'  - path: /etc/kubernetes/x\n'.repeat(Math.ceil(paddingBytes / 28)).slice(0, paddingBytes)}`,
  };
}

/**
 * A TerraformMachine after some life: applied, drift-checked and refreshed, with conditions and lastRun.
 * `targetBytes` pads `spec.variables.user_data` until the JSON text is that long, within a few bytes (0: no
 * padding).
 */
export function machineObject(
  options: { uid?: string; resourceVersion?: string; targetBytes?: number } = {},
): Record<string, unknown> {
  const build = (paddingBytes: number) => ({
    apiVersion: API_VERSION,
    kind: 'TerraformMachine',
    metadata: {
      name: MACHINE_NAME,
      namespace: NAMESPACE,
      uid: options.uid ?? MACHINE_UID,
      resourceVersion: options.resourceVersion ?? '4815162342',
      generation: 7,
      creationTimestamp: ago(30 * 86400),
      labels: { 'cluster.x-k8s.io/cluster-name': 'workers-eu', 'app.kubernetes.io/part-of': 'fleet' },
      annotations: { 'cluster.x-k8s.io/machine': 'workers-eu-md-0-7x9kq' },
      finalizers: ['captf.io/finalizer'],
      ownerReferences: [
        {
          apiVersion: 'cluster.x-k8s.io/v1beta2',
          kind: 'Machine',
          name: 'workers-eu-md-0-7x9kq',
          uid: '0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [managedField('manager'), managedField('captf', 'status')],
    },
    spec: {
      source: { image: 'registry.example.com/modules/aws-machine@sha256:'.padEnd(110, '0') },
      variables: variables(paddingBytes),
      variablesFrom: [{ name: 'join_token', secretKeyRef: { name: 'workers-eu-join', key: 'token' } }],
      backend: { type: 'kubernetes' },
      applyPolicy: 'Automatic',
      driftCheck: { enabled: true, action: 'Report' },
      refresh: { interval: '1h' },
      providerID: 'aws:///eu-west-1a/i-0123456789abcdef0',
    },
    status: {
      observedGeneration: 7,
      ready: true,
      initialization: { provisioned: true },
      conditions: ['Ready', 'Provisioned', 'DriftDetected', 'Paused'].map((type) => ({
        type,
        status: type === 'Ready' || type === 'Provisioned' ? 'True' : 'False',
        reason: type === 'DriftDetected' ? 'DriftChecked' : 'ApplySucceeded',
        message: '',
        lastTransitionTime: ago(7200),
        observedGeneration: 7,
      })),
      lastRun: {
        job: 'captf-m-workers-eu-west-1a-7-drift-a12-3f9a1c',
        op: 'drift',
        attempt: 12,
        generation: 7,
        inputsHash: INPUTS_HASH,
        startedAt: ago(700),
        finishedAt: ago(600),
        result: 'succeeded',
        reason: 'DriftChecked',
        steps: ['prepare', 'init', 'plan', 'show-json'].map((name) => ({ name, exit: 0, seconds: 4.2 })),
        drift: { detected: false },
      },
      lastSuccess: { apply: ago(7200), drift: ago(600), refresh: ago(1200) },
      appliedInputsHash: INPUTS_HASH,
      appliedGeneration: 7,
      source: { pinnedImage: 'registry.example.com/modules/aws-machine@sha256:'.padEnd(110, '0') },
      addresses: [
        { type: 'InternalIP', address: '10.0.12.34' },
        { type: 'Hostname', address: 'ip-10-0-12-34.eu-west-1.compute.internal' },
      ],
    },
  });
  const target = options.targetBytes ?? 0;
  if (target === 0) return build(0);
  // JSON escapes the padding's newlines, so its text is longer than its length: scale by what one try gave.
  const bare = JSON.stringify(build(0)).length;
  const firstGuess = Math.max(1, target - bare);
  const grown = JSON.stringify(build(firstGuess)).length - bare;
  return build(Math.max(0, Math.round((firstGuess * firstGuess) / grown)));
}

/** The op and outcome of the i-th newest retained Job: mostly drift checks, some refreshes and applies. */
function history(index: number): { op: Op; outcome: 'succeeded' | 'step-failed' } {
  const op: Op = index % 6 === 5 ? 'apply' : index % 3 === 2 ? 'refresh' : 'drift';
  return { op, outcome: op === 'apply' && index % 12 === 11 ? 'step-failed' : 'succeeded' };
}

/**
 * `count` finished, bookkept Jobs of the machine as the API server lists them, newest first; Job i finished
 * `(i + 1) * 10` minutes before BENCH_NOW, with an attempt number per op.
 */
export function retainedJobs(count: number): JobView[] {
  const policy = resolveJobsPolicy(undefined);
  const owner = {
    apiVersion: API_VERSION,
    kind: 'TerraformMachine' as const,
    name: MACHINE_NAME,
    namespace: NAMESPACE,
    uid: MACHINE_UID,
    generation: 7,
    clusterName: 'workers-eu',
  };
  return Array.from({ length: count }, (_, index) => {
    const { op, outcome } = history(index);
    const attempt = count - index;
    const name = `captf-m-${MACHINE_NAME}-${op}-a${attempt}-${(index * 7919).toString(16).padStart(6, '0').slice(-6)}`;
    const manifest = buildJobManifest({
      owner,
      name,
      op,
      attempt,
      inputsHash: INPUTS_HASH,
      image: 'registry.example.com/modules/aws-machine:1.4.2',
      runnerImage: 'registry.example.com/captf-runner:0.1.0',
      policy,
      serviceAccountName: `captf-runner-m-${MACHINE_NAME}`,
    });
    const finishedAt = ago((index + 1) * 600);
    const failed = outcome !== 'succeeded';
    const listed = {
      ...manifest,
      metadata: {
        ...manifest.metadata,
        uid: `job-uid-${index}`,
        resourceVersion: String(1000 + index),
        generation: 1,
        creationTimestamp: ago((index + 1) * 600 + 120),
        annotations: {
          ...manifest.metadata.annotations,
          [ANNOTATIONS.bookkept]: 'true',
          [ANNOTATIONS.outcome]: outcome,
          [ANNOTATIONS.finishedAt]: finishedAt,
        },
        managedFields: [managedField('captf'), managedField('kube-controller-manager', 'status')],
      },
      spec: {
        ...manifest.spec,
        parallelism: 1,
        completions: 1,
        completionMode: 'NonIndexed',
        suspend: false,
        podReplacementPolicy: 'TerminatingOrFailed',
        manualSelector: false,
        selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': `job-uid-${index}` } },
      },
      status: {
        startTime: ago((index + 1) * 600 + 110),
        ...(failed ? { failed: 1 } : { succeeded: 1, completionTime: finishedAt }),
        ready: 0,
        terminating: 0,
        uncountedTerminatedPods: {},
        conditions: (failed ? ['FailureTarget', 'Failed'] : ['SuccessCriteriaMet', 'Complete']).map(
          (type) => ({
            type,
            status: 'True',
            lastProbeTime: finishedAt,
            lastTransitionTime: finishedAt,
            ...(failed
              ? { reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }
              : {}),
          }),
        ),
      },
    };
    return listed;
  });
}

/** The runner's result of a successful apply, as the runner writes it to the termination log. */
export function appliedResult(): RunnerResult {
  return {
    version: 1,
    op: 'apply',
    result: 'succeeded',
    steps: ['prepare', 'init', 'validate', 'plan', 'show-json', 'apply'].map((name, i) => ({
      name: name as RunnerResult['steps'][number]['name'],
      exit: 0,
      seconds: 1.5 + i,
    })),
    plan: { digest: `sha256:${'ab'.repeat(32)}`, add: 3, change: 1, destroy: 0, destructive: false },
    outputs: {
      providerID: 'aws:///eu-west-1a/i-0123456789abcdef0',
      addresses: [{ type: 'InternalIP', address: '10.0.12.34' }],
    },
    imageDigest: `sha256:${'cd'.repeat(32)}`,
  };
}

/** A finished Job (Complete) for classification, with its deadline; the shape bookkeeping reads. */
export function finishedJob(name: string): JobView {
  return {
    metadata: { name, namespace: NAMESPACE, creationTimestamp: ago(400) },
    spec: { activeDeadlineSeconds: 3600 },
    status: {
      startTime: ago(390),
      completionTime: ago(10),
      succeeded: 1,
      conditions: ['SuccessCriteriaMet', 'Complete'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: ago(10),
      })),
    },
  };
}

/** A pod of the Job whose `source` container exited with `exitCode` and `message` as termination message. */
export function finishedPod(
  name: string,
  createdSecondsAgo: number,
  exitCode: number,
  message: string,
): PodView {
  return {
    metadata: { name, namespace: NAMESPACE, creationTimestamp: ago(createdSecondsAgo) },
    status: {
      phase: exitCode === 0 ? 'Succeeded' : 'Failed',
      conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted' }],
      initContainerStatuses: [
        { name: 'runner', state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: ago(380) } } },
      ],
      containerStatuses: [
        {
          name: 'source',
          restartCount: 0,
          state: {
            terminated: {
              exitCode,
              reason: exitCode === 0 ? 'Completed' : 'Error',
              message,
              finishedAt: ago(12),
            },
          },
        },
      ],
    },
  };
}
