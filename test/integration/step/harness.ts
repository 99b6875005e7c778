import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type EventsV1Event,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
  type V1Pod,
  type V1Secret,
} from '@kubernetes/client-node';
import type { Clock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter, type KubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import type { CustomObject } from '../../../src/adapters/kube/custom-object.ts';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { createRedisAdapter, type RedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { ANNOTATIONS } from '../../../src/core/job-labels.ts';
import type { ObjectKind, ObjectRef } from '../../../src/core/object-ref.ts';
import { CLUSTERCTL_MOVE_LABEL } from '../../../src/core/run-secret-manifest.ts';
import type { StepAction, StepOutcome } from '../../../src/core/step-outcome.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';
import type { RunnerResult, StateReport } from '../../../src/schemas/result.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
import type { StepConfig } from '../../../src/step/deps.ts';
import { armedFailpoints, type Failpoint, NO_FAILPOINTS } from '../../../src/step/failpoints.ts';
import { createReconcileStep } from '../../../src/step/step.ts';
import { NO_STEP_METRICS, type StepMetrics } from '../../../src/step/step-metrics.ts';
import { testStack } from '../../env/index.ts';
import { shadowedByDryRun } from './dry-run-shadow.ts';

/**
 * The step's test environment on the real stack (test/env, whose global setup applies infra/crds): one
 * namespace and one Redis key prefix per test file, the real Kubernetes and Redis adapters, and a kubelet
 * played by the test: there is no node, so pods stay Pending until the test writes their status through the
 * `/status` subresource, and the real Job controller then completes or fails the Job from the pod phases.
 * Every step it hands out is shadowed by a dry run over `/reconcile?dryRun=true` that must decide the same
 * (./dry-run-shadow.ts), so every field case also proves the dry run.
 */

/** A clock that follows the wall clock plus an offset the test moves (deadlines, backoff). */
export interface TestClock extends Clock {
  advance(seconds: number): void;
}

function testClock(): TestClock {
  let offsetMs = 0;
  return {
    nowMs: () => Date.now() + offsetMs,
    advance: (seconds) => {
      offsetMs += seconds * 1000;
    },
  };
}

/** How the played kubelet ends the `source` container of a pod. */
export interface PodEnd {
  exitCode: number;
  /** The termination message: a runner result (serialised here) or raw text. */
  result?: RunnerResult | string;
  /** `state.terminated.reason`, e.g. `OOMKilled`; default Completed/Error by the exit code. */
  reason?: string;
  /** Pod-level `status.reason`, e.g. `DeadlineExceeded`. */
  podReason?: string;
  /** Adds the `DisruptionTarget` condition (drain, eviction). */
  disrupted?: boolean;
  /** Leaves `containerStatuses` empty (C08 a). */
  noContainerStatuses?: boolean;
  /** The `source` container's `imageID`, as a kubelet reports the digest it ran; '' by default. */
  imageID?: string;
  /** A real runner ran against the real backend: the state it wrote stays (no played backend). */
  realBackend?: boolean;
}

export interface StepEnv {
  namespace: string;
  kube: KubeAdapter;
  redis: RedisAdapter;
  keyPrefix: string;
  clock: TestClock;
  core: CoreV1Api;
  batch: BatchV1Api;
  custom: CustomObjectsApi;
  events: EventsV1Api;
  config: StepConfig;
  /** A step over this env (a fresh one is like a cold start: nothing is kept between calls anyway). */
  step(options?: {
    failpoints?: Failpoint[];
    redis?: RedisAdapter;
    config?: Partial<StepConfig>;
    /** The step's metrics; none by default. */
    metrics?: StepMetrics;
    /** Precede each step with a dry run that must decide the same (default true; off to count requests). */
    shadow?: boolean;
  }): ReconcileStep;
  close(): Promise<void>;
}

export const RUNNER_IMAGE = 'registry.example.com/captf/runner:test';
export const MODULE_IMAGE = 'registry.example.com/modules/demo:1.0.0';

function kubeConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromFile(testStack().kubeconfigPath);
  return config;
}

/** Polls `read` until `done` holds; throws after `timeoutMs` with `what`. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`wait for ${what}: timed out after ${timeoutMs} ms`);
    await sleep(150);
    value = await read();
  }
  return value;
}

/**
 * Puts a ResourceQuota `count/jobs.batch: 0` named `no-jobs` in force in `e`'s namespace: the API server's
 * quota admission refuses every Job create there (403). The test stack runs no quota controller, so its
 * status (what admission enforces) is written as that controller would; returns once a dry-run create is
 * refused (the admission's quota cache), with `lift`, which deletes it and waits until a create passes.
 */
export async function refuseJobs(e: StepEnv): Promise<{ lift(): Promise<void> }> {
  const name = 'no-jobs';
  const hard = { 'count/jobs.batch': '0' };
  await e.core.createNamespacedResourceQuota({
    namespace: e.namespace,
    body: { metadata: { name }, spec: { hard } },
  });
  await e.core.patchNamespacedResourceQuotaStatus(
    { namespace: e.namespace, name, body: { status: { hard, used: hard } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const probe = { metadata: { name: 'quota-probe' }, spec: { template: { spec: PROBE_POD } } };
  const refused = () =>
    e.batch.createNamespacedJob({ namespace: e.namespace, dryRun: 'All', body: probe }).then(
      () => false,
      (error: unknown) => {
        if (error instanceof ApiException && error.code === 403) return true;
        throw error;
      },
    );
  await eventually(refused, (is) => is, 60_000, 'quota in force');
  return {
    lift: async () => {
      await e.core.deleteNamespacedResourceQuota({ namespace: e.namespace, name });
      await eventually(refused, (is) => !is, 60_000, 'quota lifted');
    },
  };
}

/** The pod of a Job that is only ever created as a dry run. */
const PROBE_POD = {
  restartPolicy: 'Never',
  containers: [{ name: 'c', image: 'example.invalid/x:1' }],
};

/**
 * Creates the env: namespace, CRDs, adapters. `namespaceLabels` label the namespace, e.g. a Pod Security
 * level to enforce.
 */
export async function createStepEnv(
  label: string,
  options: { namespaceLabels?: Record<string, string> } = {},
): Promise<StepEnv> {
  const config = kubeConfig();
  const core = config.makeApiClient(CoreV1Api);
  const namespace = `step-${label}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({
    body: { metadata: { name: namespace, labels: options.namespaceLabels ?? {} } },
  });
  const clock = testClock();
  const kube = createKubeAdapter({
    source: { kind: 'file', path: testStack().kubeconfigPath },
    clock,
    reporter: { controller: 'captf.io/controller', instance: `step-test-${label}` },
  });
  const keyPrefix = `t${randomBytes(4).toString('hex')}`;
  const redis = createRedisAdapter({ url: testStack().redisUrl, keyPrefix });
  await redis.waitUntilReady(10_000);
  const stepConfig: StepConfig = { runnerImage: RUNNER_IMAGE, maxActiveJobs: 200, clusterMaxActiveJobs: 20 };
  return {
    namespace,
    kube,
    redis,
    keyPrefix,
    clock,
    core,
    batch: config.makeApiClient(BatchV1Api),
    custom: config.makeApiClient(CustomObjectsApi),
    events: config.makeApiClient(EventsV1Api),
    config: stepConfig,
    step: (options = {}) => {
      const step = createReconcileStep({
        kube,
        redis: options.redis ?? redis,
        clock,
        config: { ...stepConfig, ...options.config },
        failpoints: options.failpoints ? armedFailpoints(options.failpoints) : NO_FAILPOINTS,
        metrics: options.metrics ?? NO_STEP_METRICS,
      });
      return options.shadow === false ? step : shadowedByDryRun(step);
    },
    close: async () => {
      await redis.close();
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}

/** The ref of an object in the env's namespace. */
export function refOf(env: StepEnv, kind: ObjectKind, name: string): ObjectRef {
  return { kind, namespace: env.namespace, name };
}

/** Creates one of our objects with `spec` (image defaulted). */
export async function createObject(
  env: StepEnv,
  kind: ObjectKind,
  name: string,
  spec: Record<string, unknown> = {},
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): Promise<ObjectRef> {
  const resource = CUSTOM_RESOURCES[kind];
  await env.custom.createNamespacedCustomObject({
    ...resource,
    namespace: env.namespace,
    body: {
      apiVersion: `${resource.group}/${resource.version}`,
      kind,
      metadata: { name, namespace: env.namespace, ...meta },
      spec: { source: { image: MODULE_IMAGE }, ...spec },
    },
  });
  return refOf(env, kind, name);
}

/** Creates a Secret in the env's namespace; `labels` e.g. the variables opt-in (issue 16). */
export async function createSecret(
  env: StepEnv,
  name: string,
  data: Record<string, string>,
  labels: Readonly<Record<string, string>> = {},
): Promise<void> {
  await env.core.createNamespacedSecret({
    namespace: env.namespace,
    body: { metadata: { name, labels: { ...labels } }, stringData: data },
  });
}

/** Reads one of our objects. */
export async function readObject(env: StepEnv, ref: ObjectRef): Promise<CustomObject> {
  const object = await env.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name);
  if (!object) throw new Error(`read ${ref.kind} ${ref.name}: not found`);
  return object;
}

/** The object's status as written. */
export async function statusOf(env: StepEnv, ref: ObjectRef): Promise<TargetStatus> {
  return ((await readObject(env, ref)).status ?? {}) as TargetStatus;
}

/** Merge-patches the object's spec (a person editing it). */
export async function patchSpec(env: StepEnv, ref: ObjectRef, spec: Record<string, unknown>): Promise<void> {
  const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
  await env.custom.patchNamespacedCustomObject(
    { ...CUSTOM_RESOURCES[ref.kind], namespace: ref.namespace, name: ref.name, body: { spec } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Merge-patches the object's annotations (a person annotating it; `null` removes one). */
export async function patchAnnotations(
  env: StepEnv,
  ref: ObjectRef,
  annotations: Record<string, string | null>,
): Promise<void> {
  const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
  await env.custom.patchNamespacedCustomObject(
    {
      ...CUSTOM_RESOURCES[ref.kind],
      namespace: ref.namespace,
      name: ref.name,
      body: { metadata: { annotations } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** The object's Jobs (label `captf.io/owner-uid`), oldest first. */
export async function jobsOf(env: StepEnv, ref: ObjectRef): Promise<V1Job[]> {
  const object = await readObject(env, ref);
  const jobs = await env.kube.reader.listJobs({
    namespace: ref.namespace,
    labelSelector: { 'captf.io/owner-uid': object.metadata.uid },
  });
  return jobs.sort(
    (a, b) =>
      (a.metadata?.creationTimestamp?.getTime() ?? 0) - (b.metadata?.creationTimestamp?.getTime() ?? 0),
  );
}

/** Runs steps until one answers `action` (at most `max`); returns that outcome. */
export async function stepUntil(
  step: ReconcileStep,
  ref: ObjectRef,
  action: StepAction,
  max = 5,
): Promise<StepOutcome> {
  let last: StepOutcome | undefined;
  for (let i = 0; i < max; i += 1) {
    last = await step(ref);
    if (last.action === action) return last;
  }
  throw new Error(`step ${ref.name} until ${action}: last outcome ${JSON.stringify(last)}`);
}

/** Waits for the Job controller to create the Job's pod; returns it. */
export async function podOf(env: StepEnv, job: string): Promise<V1Pod> {
  const pods = await eventually(
    () => env.core.listNamespacedPod({ namespace: env.namespace, labelSelector: `job-name=${job}` }),
    (list) => list.items.length > 0,
    30_000,
    `pod of ${job}`,
  );
  const pod = pods.items[0];
  if (!pod) throw new Error(`pod of ${job}: none`);
  return pod;
}

async function writePodStatus(env: StepEnv, pod: V1Pod, status: V1Pod['status']): Promise<void> {
  const name = pod.metadata?.name ?? '';
  for (let tries = 0; tries < 5; tries += 1) {
    const fresh = await env.core.readNamespacedPod({ namespace: env.namespace, name });
    try {
      await env.core.replaceNamespacedPodStatus({
        namespace: env.namespace,
        name,
        body: { ...fresh, status },
      });
      return;
    } catch (error) {
      if (!String(error).includes('409')) throw error;
    }
  }
  throw new Error(`write status of pod ${name}: conflicts`);
}

function containerBase(name: string, image: string) {
  return { name, image, imageID: '', ready: false, restartCount: 0 };
}

/** Plays the kubelet: the pod runs (init done, `source` running). */
export async function runPod(env: StepEnv, pod: V1Pod): Promise<void> {
  const started = new Date();
  await writePodStatus(env, pod, {
    phase: 'Running',
    startTime: started,
    initContainerStatuses: [
      {
        ...containerBase('runner', RUNNER_IMAGE),
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: started, finishedAt: started } },
      },
    ],
    containerStatuses: [
      {
        ...containerBase('source', MODULE_IMAGE),
        ready: true,
        started: true,
        state: { running: { startedAt: started } },
      },
    ],
  });
}

/** Plays the kubelet: `source` waits in a pull failure (C09). */
export async function pullTrouble(
  env: StepEnv,
  pod: V1Pod,
  reason: 'ErrImagePull' | 'ImagePullBackOff' | 'InvalidImageName',
): Promise<void> {
  const started = new Date();
  await writePodStatus(env, pod, {
    phase: 'Pending',
    startTime: started,
    initContainerStatuses: [
      {
        ...containerBase('runner', RUNNER_IMAGE),
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: started, finishedAt: started } },
      },
    ],
    containerStatuses: [
      {
        ...containerBase('source', MODULE_IMAGE),
        state: { waiting: { reason, message: `pull ${MODULE_IMAGE}: not found` } },
      },
    ],
  });
}

/**
 * Plays the kubelet: one container waits with `reason` (a pull failure or `CreateContainerConfigError`):
 * the `runner` init container (then `source` waits in `PodInitializing`), or `source` after the init ran.
 */
export async function containerWaiting(
  env: StepEnv,
  pod: V1Pod,
  container: 'runner' | 'source',
  reason: 'ErrImagePull' | 'ImagePullBackOff' | 'InvalidImageName' | 'CreateContainerConfigError',
): Promise<void> {
  const started = new Date();
  const waiting = { waiting: { reason, message: `${container}: ${reason}` } };
  await writePodStatus(env, pod, {
    phase: 'Pending',
    startTime: started,
    initContainerStatuses: [
      {
        ...containerBase('runner', RUNNER_IMAGE),
        state:
          container === 'runner'
            ? waiting
            : { terminated: { exitCode: 0, reason: 'Completed', startedAt: started, finishedAt: started } },
      },
    ],
    containerStatuses: [
      {
        ...containerBase('source', MODULE_IMAGE),
        state: container === 'source' ? waiting : { waiting: { reason: 'PodInitializing' } },
      },
    ],
  });
}

/** A state as OpenTofu writes it: one managed resource, or none once destroyed. */
export function tfstate(withResource: boolean): Buffer {
  const resources = withResource
    ? [{ mode: 'managed', type: 'terraform_data', name: 'this', instances: [{ attributes: { id: 'x' } }] }]
    : [];
  return gzipSync(JSON.stringify({ version: 4, serial: 1, lineage: 'test', resources }));
}

/** Writes the state Secret of the state suffix (created when the runner identity did not create it). */
export async function writeState(env: StepEnv, suffix: string, state: Buffer): Promise<V1Secret> {
  const name = `tfstate-default-${suffix}`;
  const data = { tfstate: state.toString('base64') };
  const existing = await env.core
    .readNamespacedSecret({ namespace: env.namespace, name })
    .catch(() => undefined);
  if (existing)
    return env.core.replaceNamespacedSecret({ namespace: env.namespace, name, body: { ...existing, data } });
  return env.core.createNamespacedSecret({ namespace: env.namespace, body: { metadata: { name }, data } });
}

/**
 * Plays OpenTofu's kubernetes backend for a run that ends well: a successful apply leaves a resource in the
 * state, a successful destroy none, so the step's state checks (issue 23 item 5) see what a real run leaves.
 * Answers what the runner's proxy saw of the Secret it wrote (the result's `state`, src/runner/kube-proxy.ts).
 */
async function playBackend(env: StepEnv, pod: V1Pod, end: PodEnd): Promise<StateReport | undefined> {
  if (typeof end.result !== 'object' || end.result.result !== 'succeeded') return undefined;
  if (end.result.op !== 'apply' && end.result.op !== 'destroy') return undefined;
  const jobName = pod.metadata?.ownerReferences?.find((owner) => owner.kind === 'Job')?.name;
  if (!jobName) return undefined;
  const job = await env.batch.readNamespacedJob({ namespace: env.namespace, name: jobName });
  const suffix = job.metadata?.annotations?.[ANNOTATIONS.stateSuffix];
  if (!suffix) return undefined;
  const state = tfstate(end.result.op === 'apply');
  const written = await writeState(env, suffix, state);
  return { bytes: state.length, moveLabel: written.metadata?.labels?.[CLUSTERCTL_MOVE_LABEL] !== undefined };
}

/** Plays the kubelet: `source` ends as `end` says, and the pod's phase follows the exit code. */
export async function endPod(env: StepEnv, pod: V1Pod, end: PodEnd): Promise<void> {
  const seen = end.realBackend === true ? undefined : await playBackend(env, pod, end);
  const now = new Date();
  // The runner reports the state its proxy saw, unless the test says what it reported.
  const reported =
    typeof end.result === 'object' && end.result.state === undefined && seen !== undefined
      ? { ...end.result, state: seen }
      : end.result;
  const message =
    reported === undefined ? undefined : typeof reported === 'string' ? reported : JSON.stringify(reported);
  await writePodStatus(env, pod, {
    phase: end.exitCode === 0 ? 'Succeeded' : 'Failed',
    startTime: now,
    ...(end.podReason ? { reason: end.podReason } : {}),
    ...(end.disrupted
      ? {
          conditions: [
            {
              type: 'DisruptionTarget',
              status: 'True',
              reason: 'EvictionByEvictionAPI',
              lastTransitionTime: now,
            },
          ],
        }
      : {}),
    initContainerStatuses: [
      {
        ...containerBase('runner', RUNNER_IMAGE),
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now } },
      },
    ],
    containerStatuses: end.noContainerStatuses
      ? []
      : [
          {
            ...containerBase('source', MODULE_IMAGE),
            imageID: end.imageID ?? '',
            state: {
              terminated: {
                exitCode: end.exitCode,
                reason: end.reason ?? (end.exitCode === 0 ? 'Completed' : 'Error'),
                ...(message !== undefined ? { message } : {}),
                startedAt: now,
                finishedAt: now,
              },
            },
          },
        ],
  });
}

/** Waits until the Job controller marks the Job Complete or Failed. */
export async function jobFinished(env: StepEnv, job: string): Promise<V1Job> {
  return eventually(
    () => env.batch.readNamespacedJob({ namespace: env.namespace, name: job }),
    (read) =>
      read.status?.conditions?.some(
        (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
      ) === true,
    60_000,
    `Job ${job} finished`,
  );
}

/** A runner result document (src/schemas/result.ts) for `op`. */
export function result(
  op: RunnerResult['op'],
  outcome: RunnerResult['result'],
  extra: Partial<RunnerResult> = {},
): RunnerResult {
  return { version: 1, op, result: outcome, steps: [{ name: 'init', exit: 0, seconds: 1.5 }], ...extra };
}

/** Events about the object (events.k8s.io/v1). */
export async function eventsOf(env: StepEnv, ref: ObjectRef): Promise<EventsV1Event[]> {
  const list = await env.events.listNamespacedEvent({ namespace: env.namespace });
  return list.items.filter(
    (event) => event.regarding?.name === ref.name && event.regarding?.kind === ref.kind,
  );
}

/** Simulates the step lock's 30 s expiry after a crashed step (the failpoint left it held). */
export async function expireStepLock(env: StepEnv, ref: ObjectRef): Promise<void> {
  await env.redis.client.del(env.redis.keys.stepLock(ref));
}

/** Creates an object and steps it until its first Job exists; returns the ref and the Job name. */
export async function startedObject(
  env: StepEnv,
  kind: ObjectKind,
  name: string,
  spec: Record<string, unknown> = {},
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): Promise<{ ref: ObjectRef; job: string }> {
  const ref = await createObject(env, kind, name, spec, meta);
  const created = await stepUntil(env.step(), ref, 'created');
  if (!created.job) throw new Error(`start ${name}: no Job named`);
  return { ref, job: created.job };
}

/** Ends the Job's pod as `end` says and waits for the Job to finish. */
export async function finishJob(env: StepEnv, job: string, end: PodEnd): Promise<V1Job> {
  const pod = await podOf(env, job);
  await endPod(env, pod, end);
  return jobFinished(env, job);
}
