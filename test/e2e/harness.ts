import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';
import type { RedisTopology } from '../../src/adapters/redis/topology.ts';
import { dedicatedToleration } from '../../src/local/dedicated-node.ts';
import { type Kubectl, kubectlFor } from '../../src/local/kubectl.ts';
import {
  type LocalController,
  type LocalEventPath,
  startLocalController,
} from '../../src/local/local-controller.ts';
import { prepareWorkloadNamespace } from '../../src/local/workload-namespace.ts';
import type { PlanChanges } from '../../src/schemas/plan-changes.ts';
import { testStack } from '../env/index.ts';
import { testTempDir } from '../env/temp-dir.ts';

/**
 * The end-to-end environment: the same local run as the main job (src/local/local-controller.ts: CRDs,
 * approval policy, runner, local node, handlers with the real step, relay and timer) on the test stack, a
 * fresh namespace prepared as the main job prepares `team-a`, and the observations a person makes with
 * kubectl (object status, Events, Jobs, pods). Every wait polls live state with a bounded timeout.
 */

const repoRoot = join(import.meta.dirname, '..', '..');

/** The sample the main job applies. */
export const SAMPLE_FILE = join(repoRoot, 'infra', 'samples', 'local', 'demo.yaml');

/** Our kinds as kubectl resource names. */
export const RESOURCE = {
  TerraformCluster: 'terraformcluster',
  TerraformMachine: 'terraformmachine',
  TerraformMachinePool: 'terraformmachinepool',
  TerraformPlan: 'terraformplan',
} as const;
export type Resource = (typeof RESOURCE)[keyof typeof RESOURCE];

/** A condition as written by the controller. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** The parts of one of our objects the tests read. */
export interface ObservedObject {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec: {
    variables?: Record<string, unknown>;
    providerID?: string;
    providerIDList?: string[];
    controlPlaneEndpoint?: { host: string; port: number };
  };
  status?: {
    ready?: boolean;
    initialization?: { provisioned?: boolean };
    replicas?: number;
    stateSuffix?: string;
    conditions?: Condition[];
    activeJob?: { name: string; op: string; attempt: number };
    lastRun?: {
      job: string;
      op: string;
      attempt: number;
      result: string;
      reason?: string;
      inputsHash: string;
      error?: { kind: string; step?: string; summary?: string };
      plan?: { digest?: string; add: number; change: number; destroy: number };
      drift?: { detected: boolean };
    };
    waitReason?: string;
    nextAttemptAt?: string;
    pendingPlanRef?: { name: string };
    addresses?: { type: string; address: string }[];
    source?: { pinnedImage?: string };
    outputs?: { secretName: string; names?: string[] };
    exports?: Record<string, unknown>;
    failureDomains?: { name: string; controlPlane?: boolean }[];
  };
}

/** A TerraformPlan as the tests read it. */
export interface ObservedPlan {
  metadata: { name: string };
  spec: {
    digest: string;
    add: number;
    change: number;
    destroy: number;
    approved?: boolean;
    targetRef: { name: string };
    /** The readable plan (DESIGN.md section 11). */
    changes?: PlanChanges;
    requestedBy?: { generation: number; manager?: string; time?: string };
  };
  status?: { phase?: string; appliedBy?: string };
}

/** A core/v1 Event, as far as the tests read it. */
export interface ObservedEvent {
  reason: string;
  message?: string;
  type: string;
  involvedObject: { kind: string; name: string };
}

/** A running end-to-end environment. */
export interface E2eRun {
  namespace: string;
  nodeName: string;
  /** Prefix of the controller's Redis keys. */
  keyPrefix: string;
  controller: LocalController;
  kubectl: Kubectl;
  close(): Promise<void>;
}

/** What the helpers below need of a run: its namespace, its node and kubectl on the test stack. */
export type E2eScope = Pick<E2eRun, 'namespace' | 'nodeName' | 'kubectl'>;

/** How a run differs from the main job's default. */
export interface E2eRunOptions {
  /** The event path; default the bundled relay. */
  events?: LocalEventPath;
  /** The Redis the controller uses; default the test stack's single redis-server. */
  redis?: RedisTopology;
  /** The sweep period, seconds; default the local run's 60. */
  syncPeriodSeconds?: number;
  /** The handlers' log level; default `info` (`debug` logs every step, as tests that count steps need). */
  logLevel?: 'info' | 'debug';
  /** Image directories the node searches after the local images (test/fixtures/images, for one). */
  imageDirs?: readonly string[];
}

/** Starts the local run's controller on the test stack with its own node, Redis keys and namespace. */
export async function startE2eRun(label: string, options: E2eRunOptions = {}): Promise<E2eRun> {
  const stack = testStack();
  const suffix = randomBytes(3).toString('hex');
  // The node's pod directories and the logs: removed after the file's last test, a failed start's too.
  const workDir = testTempDir(`captf-e2e-${label}-`);
  const nodeName = `captf-e2e-${label}-${suffix}`;
  const keyPrefix = `e2e-${label}-${suffix}`;
  // The approval policy is cluster-wide; other test files approve plans as the admin in another name, so
  // the run leaves the shared stack as it found it.
  const policyFile = join(repoRoot, 'infra', 'admission', 'approval-policy.yaml');
  const policyBefore = await kubectlFor(stack.kubectlPath, stack.kubeconfigPath)
    .run(['get', '-f', policyFile, '-o', 'name'])
    .then(() => true)
    .catch(() => false);
  const namespace = `e2e-${label}-${suffix}`;
  const controller = await startLocalController({
    stack: options.redis === undefined ? stack : { ...stack, redis: options.redis },
    workDir,
    ...(options.events === undefined ? {} : { events: options.events }),
    ...(options.syncPeriodSeconds === undefined ? {} : { syncPeriodSeconds: options.syncPeriodSeconds }),
    ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
    ...(options.imageDirs === undefined ? {} : { imageDirs: options.imageDirs }),
    nodeName,
    keyPrefix,
    // One API server serves every test file: a run steps its own namespace only, never another's leftovers.
    watchNamespaces: [namespace],
    tickIntervalMs: 1000,
  });
  await prepareWorkloadNamespace(controller.kubectl, namespace, stack);
  return {
    namespace,
    nodeName,
    keyPrefix,
    controller,
    kubectl: controller.kubectl,
    close: async () => {
      // The controller stops first (a running one would put back the finalizers removed below), then the
      // finalizers go: with the controller gone nobody would remove them and the namespace would hang.
      await controller.stop();
      for (const resource of ['terraformclusters', 'terraformmachines', 'terraformmachinepools']) {
        const names = await controller.kubectl
          .run(['get', resource, '-n', namespace, '-o', 'name'])
          .catch(() => '');
        for (const name of names.split('\n').filter(Boolean)) {
          await controller.kubectl
            .run(['patch', name, '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'])
            .catch(() => undefined);
        }
      }
      if (!policyBefore) {
        await controller.kubectl
          .run(['delete', '-f', policyFile, '--ignore-not-found'])
          .catch(() => undefined);
      }
      await controller.kubectl.run(['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
    },
  };
}

/**
 * The `spec.jobs` scheduling that pins a run's pods to its own node: the node's hostname (plus any extra
 * `nodeSelector` labels) and the toleration of its dedicated taint.
 */
export function pinnedJobs(
  run: Pick<E2eScope, 'nodeName'>,
  nodeSelector: Record<string, string> = {},
): { nodeSelector: Record<string, string>; tolerations: object[] } {
  return {
    nodeSelector: { 'kubernetes.io/hostname': run.nodeName, ...nodeSelector },
    tolerations: [dedicatedToleration(run.nodeName)],
  };
}

/**
 * The sample documents of the main job, moved to `namespace` and pinned to the test's node (other test
 * files register nodes of their own), with `overrides` merged into each object's spec by name.
 */
export function sampleDocuments(
  run: E2eScope,
  overrides: Record<string, Record<string, unknown>> = {},
): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(SAMPLE_FILE, 'utf8')).map((doc) => {
    const object = doc.toJS() as {
      metadata: { name: string; namespace?: string };
      spec: Record<string, unknown> & { jobs?: Record<string, unknown> };
    };
    object.metadata.namespace = run.namespace;
    object.spec = {
      ...object.spec,
      jobs: { ...object.spec.jobs, ...pinnedJobs(run) },
      ...overrides[object.metadata.name],
    };
    return object;
  });
}

/** A TerraformMachine of the sample machine image, pinned to the test's node. */
export function machine(
  run: E2eScope,
  name: string,
  spec: { image?: string; variables?: Record<string, unknown>; jobs?: Record<string, unknown> } & Record<
    string,
    unknown
  >,
): Record<string, unknown> {
  const { image, variables, jobs, ...rest } = spec;
  return {
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
    kind: 'TerraformMachine',
    metadata: { name, namespace: run.namespace },
    spec: {
      source: { image: image ?? 'captf.local/sample-machine:1' },
      variables: { name, ...variables },
      jobs: { ...pinnedJobs(run), ...jobs },
      ...rest,
    },
  };
}

/** `kubectl apply` of objects (a List). */
export async function applyObjects(run: E2eScope, objects: Record<string, unknown>[]): Promise<void> {
  await run.kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
  );
}

/** Reads one object; undefined when it does not exist. */
export async function readObject<T = ObservedObject>(
  run: E2eScope,
  resource: Resource,
  name: string,
): Promise<T | undefined> {
  try {
    return JSON.parse(await run.kubectl.run(['get', resource, name, '-n', run.namespace, '-o', 'json'])) as T;
  } catch (error) {
    if (String((error as Error).message).includes('NotFound')) return undefined;
    throw error;
  }
}

/** Merge-patches an object (ours, or any resource kubectl names), optionally as another user (`--as`). */
export async function patchObject(
  run: E2eScope,
  resource: Resource | string,
  name: string,
  patch: Record<string, unknown>,
  as?: string,
): Promise<string> {
  return run.kubectl.run([
    ...(as === undefined ? [] : ['--as', as]),
    'patch',
    resource,
    name,
    '-n',
    run.namespace,
    '--type=merge',
    '-p',
    JSON.stringify(patch),
  ]);
}

/** The Events of one object, oldest first. */
export async function eventsOf(run: E2eScope, name: string): Promise<ObservedEvent[]> {
  const list = JSON.parse(
    await run.kubectl.run([
      'get',
      'events',
      '-n',
      run.namespace,
      '--field-selector',
      `involvedObject.name=${name}`,
      '--sort-by=.metadata.creationTimestamp',
      '-o',
      'json',
    ]),
  ) as { items: ObservedEvent[] };
  return list.items;
}

/** Reasons of an object's Events, oldest first. */
export async function eventReasons(run: E2eScope, name: string): Promise<string[]> {
  return (await eventsOf(run, name)).map((event) => event.reason);
}

/** The names of the Jobs of one object (label `captf.io/owner-name`), oldest first. */
export async function jobsOf(run: E2eScope, name: string): Promise<string[]> {
  const out = await run.kubectl.run([
    'get',
    'jobs',
    '-n',
    run.namespace,
    '-l',
    `captf.io/owner-name=${name}`,
    '--sort-by=.metadata.creationTimestamp',
    '-o',
    'jsonpath={.items[*].metadata.name}',
  ]);
  return out.split(' ').filter(Boolean);
}

/** Names of the pods of a Job. */
export async function podsOfJob(run: E2eScope, job: string): Promise<string[]> {
  const out = await run.kubectl.run([
    'get',
    'pods',
    '-n',
    run.namespace,
    '-l',
    `job-name=${job}`,
    '-o',
    'jsonpath={.items[*].metadata.name}',
  ]);
  return out.split(' ').filter(Boolean);
}

/**
 * The log of `container` of pod `pod`, as the kubelet serves it (`kubectl logs`); '' until the container
 * has started or once the pod is gone.
 */
export async function containerLog(run: E2eScope, pod: string, container: string): Promise<string> {
  return run.kubectl.run(['logs', pod, '-c', container, '-n', run.namespace]).catch(() => '');
}

/** The condition `type` of an object, if written. */
export function conditionOf(object: ObservedObject | undefined, type: string): Condition | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

/**
 * Polls `read` every `intervalMs` until `done` holds; throws after `timeoutMs` with `what` and the last
 * value read, so a failed wait shows where the run was.
 */
export async function waitFor<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) {
      throw new Error(
        `wait for ${what}: not after ${timeoutMs} ms; last seen: ${JSON.stringify(value)?.slice(0, 2000)}`,
      );
    }
    await sleep(intervalMs);
    value = await read();
  }
  return value;
}

/** Polls one of our objects until `done` holds for it (an absent object never satisfies `done`). */
export async function waitObject(
  run: E2eScope,
  resource: Resource,
  name: string,
  what: string,
  done: (object: ObservedObject) => boolean,
  timeoutMs: number,
): Promise<ObservedObject> {
  const object = await explained(run, () =>
    waitFor(
      what,
      () => readObject(run, resource, name),
      (o) => o !== undefined && done(o),
      timeoutMs,
    ),
  );
  if (!object) throw new Error(`${name}: gone`);
  return object;
}

/**
 * Runs a wait; when it fails, adds what the namespace shows (its Jobs, pods and newest Events, with the
 * nodes the pods are bound to), so a wait that timed out in CI says whether a pod never ran, never got
 * created or never got scheduled.
 */
async function explained<T>(run: E2eScope, wait: () => Promise<T>): Promise<T> {
  try {
    return await wait();
  } catch (error) {
    const show = (args: string[]) =>
      run.kubectl.run(args).catch((cause: unknown) => `(${args.join(' ')}: ${String(cause).slice(0, 200)})`);
    const [workloads, events] = await Promise.all([
      show(['get', 'jobs,pods', '-n', run.namespace, '-o', 'wide']),
      show(['get', 'events', '-n', run.namespace, '--sort-by=.lastTimestamp']),
    ]);
    const newest = events.trim().split('\n').slice(-25).join('\n');
    throw new Error(
      `${error instanceof Error ? error.message : String(error)}\n--- jobs and pods in ${run.namespace}:\n${workloads}\n--- newest events:\n${newest}`,
    );
  }
}

/** Waits until an object's Ready condition is True for its current generation's inputs. */
export async function waitReady(
  run: E2eScope,
  resource: Resource,
  name: string,
  timeoutMs: number,
): Promise<ObservedObject> {
  const object = await explained(run, () =>
    waitFor(
      `${name} Ready`,
      () => readObject(run, resource, name),
      (o) => conditionOf(o, 'Ready')?.status === 'True' && o?.status?.activeJob === undefined,
      timeoutMs,
    ),
  );
  if (!object) throw new Error(`${name}: gone`);
  return object;
}

/** Name of the state Secret of Terraform's kubernetes backend for an object (its `status.stateSuffix`). */
export function stateSecretName(stateSuffix: string): string {
  return `tfstate-default-${stateSuffix}`;
}

/** A Terraform state document, as far as the drift test edits it. */
interface TerraformState {
  serial: number;
  resources: { type: string; name: string; instances: { attributes: Record<string, unknown> }[] }[];
}

/**
 * Changes the state behind the module's back, as a change made outside Terraform does once refreshed:
 * `edit` rewrites the decoded state (the backend stores it gzip'd in `data.tfstate`).
 */
export async function editState(
  run: E2eScope,
  stateSuffix: string,
  edit: (state: TerraformState) => void,
): Promise<void> {
  const name = stateSecretName(stateSuffix);
  const secret = JSON.parse(
    await run.kubectl.run(['get', 'secret', name, '-n', run.namespace, '-o', 'json']),
  ) as {
    data: { tfstate: string };
  };
  const state = JSON.parse(
    gunzipSync(Buffer.from(secret.data.tfstate, 'base64')).toString('utf8'),
  ) as TerraformState;
  edit(state);
  const data = gzipSync(Buffer.from(JSON.stringify(state))).toString('base64');
  await run.kubectl.run([
    'patch',
    'secret',
    name,
    '-n',
    run.namespace,
    '--type=merge',
    '-p',
    JSON.stringify({ data: { tfstate: data } }),
  ]);
}

/** One HTTP answer of the handlers, read back from their log (fastify's request lines). */
export interface HandlerAnswer {
  method: string;
  url: string;
  status: number;
  /** When the answer was logged, ms since the epoch. */
  atMs: number;
}

/**
 * Every answer the handlers gave so far, from `controller.log`: one `request completed` line per answer
 * (src/http/request-log.ts: method, url, status). Quiet answers (an idle tick's 2xx) are logged at debug,
 * so they are here only at that level; every answer other than 2xx is here. Requests in flight are not.
 */
export function handlerAnswers(run: E2eRun): HandlerAnswer[] {
  const answers: HandlerAnswer[] = [];
  const text = readFileSync(join(run.controller.logDir, 'controller.log'), 'utf8');
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as {
      msg?: string;
      time?: string;
      req?: { method: string; url: string };
      res?: { statusCode: number };
    };
    if (entry.msg === 'request completed' && entry.req && entry.res)
      answers.push({
        method: entry.req.method,
        url: entry.req.url,
        status: entry.res.statusCode,
        atMs: Date.parse(entry.time ?? ''),
      });
  }
  return answers;
}
