import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameStateSuffix } from '../../src/core/state-identity.ts';
import { testStack } from '../env/index.ts';
import { CAPI_GROUP, workloadKubeconfigSecret } from './capi-fixtures.ts';
import {
  applyObjects,
  conditionOf,
  containerLog,
  type E2eRun,
  eventsOf,
  jobsOf,
  machine,
  type ObservedEvent,
  type ObservedObject,
  patchObject,
  pinnedJobs,
  RESOURCE,
  readObject,
  startE2eRun,
  stateSecretName,
  waitFor,
  waitObject,
  waitReady,
} from './harness.ts';

// Issue 11's "Must show", end to end: the sample modules driven by Cluster API v1.14.2's real core manager
// (testStack().capi) through the local run's real relay, timer and handlers. A Cluster over a
// TerraformCluster, a MachineDeployment over TerraformMachineTemplates (bootstrap data delivered, scaled,
// rolled out), a MachinePool over a TerraformMachinePool, pause, deletion of the whole Cluster, and an
// object restored from a backup. No control plane or bootstrap provider runs: the Cluster has no
// controlPlaneRef (CAPI v1.14.2 calls it Provisioned once its infrastructure is provisioned and the endpoint
// is valid) and the bootstrap data is a Secret the test makes, as a bootstrap provider would.

const MINUTE = 60_000;
const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io';
const INFRA_VERSION = `${INFRA_GROUP}/v1alpha1`;
const CLUSTER = 'capi';
const BOOTSTRAP_SECRET = 'capi-bootstrap';
/** Must reach the module and nothing else (docs/module-contract.md: bootstrap_data is sensitive). */
const CANARY = 'tok-123-canary';
const BOOTSTRAP_DATA = `#cloud-config\nwrite_files:\n  - path: /etc/captf/join-token\n    content: ${CANARY}\n`;
/**
 * The cluster's network: not the sample module's default, so a machine's address (made from its cluster's
 * `exports`, handed to it as `cluster_exports`) shows the exports reached it.
 */
const CIDR = '10.30.0.0/16';
const ENDPOINT = { host: '10.30.0.10', port: 6443 };
/** The standalone machine of the restore test. */
const RESTORED = 'restored';

let run: E2eRun;

/** A Cluster API object as far as the tests read it. */
interface CapiObject {
  metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec: {
    replicas?: number;
    paused?: boolean;
    providerID?: string;
    providerIDList?: string[];
    controlPlaneEndpoint?: { host: string; port: number };
    infrastructureRef?: { apiGroup: string; kind: string; name: string };
  };
  status?: {
    phase?: string;
    replicas?: number;
    initialization?: { infrastructureProvisioned?: boolean };
    conditions?: { type: string; status: string; reason?: string }[];
    failureDomains?: { name: string; controlPlane?: boolean }[];
  };
}

/** Items of a list of `resource` in the run's namespace, optionally by label selector. */
async function list<T = ObservedObject>(resource: string, selector?: string): Promise<T[]> {
  const out = await run.kubectl.run([
    'get',
    resource,
    '-n',
    run.namespace,
    ...(selector === undefined ? [] : ['-l', selector]),
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as { items: T[] }).items;
}

/** One Cluster API object (resource e.g. `clusters.cluster.x-k8s.io`); undefined when absent. */
async function getCapi(resource: string, name: string): Promise<CapiObject | undefined> {
  try {
    return JSON.parse(
      await run.kubectl.run(['get', resource, name, '-n', run.namespace, '-o', 'json']),
    ) as CapiObject;
  } catch (error) {
    if (String((error as Error).message).includes('NotFound')) return undefined;
    throw error;
  }
}

/** What the namespace shows, for a failed wait over Cluster API objects. */
async function capiPicture(): Promise<string> {
  const show = (args: string[]) =>
    run.kubectl.run(args).catch((cause: unknown) => `(${args.join(' ')}: ${String(cause).slice(0, 200)})`);
  const [objects, workloads, events] = await Promise.all([
    show([
      'get',
      'clusters.cluster.x-k8s.io,machinedeployments,machinesets,machines,machinepools,terraformclusters,terraformmachines,terraformmachinepools',
      '-n',
      run.namespace,
      '-o',
      'wide',
    ]),
    show(['get', 'jobs,pods', '-n', run.namespace, '-o', 'wide']),
    show(['get', 'events', '-n', run.namespace, '--sort-by=.lastTimestamp']),
  ]);
  const capiLog = readFileSync(testStack().capi.logPath, 'utf8').trimEnd().split('\n');
  return `--- objects:\n${objects}\n--- jobs and pods:\n${workloads}\n--- newest events:\n${events
    .trim()
    .split('\n')
    .slice(-30)
    .join('\n')}\n--- capi-manager log tail:\n${capiLog
    .filter((line) => line.includes(run.namespace))
    .slice(-15)
    .join('\n')}`;
}

/** `waitFor` that adds the namespace's Cluster API picture (objects, Jobs, pods, Events) on timeout. */
/** Which of an object's per-object things (state, lock, plan key, runner identity) still exist. */
async function perObjectLeft(suffix: string): Promise<string[]> {
  const things = [
    ['secret', stateSecretName(suffix)],
    ['lease', `lock-${stateSecretName(suffix)}`],
    ['secret', `captf-plan-key-${suffix}`],
    ['serviceaccount', `captf-runner-${suffix}`],
    ['role', `captf-runner-${suffix}`],
    ['rolebinding', `captf-runner-${suffix}`],
  ];
  const left: string[] = [];
  for (const [kind, name] of things) {
    const found = await run.kubectl
      .run(['get', kind ?? '', name ?? '', '-n', run.namespace, '--ignore-not-found', '-o', 'name'])
      .then((out) => out.trim() !== '');
    if (found) left.push(`${kind}/${name}`);
  }
  return left;
}

async function waitCapi<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  try {
    return await waitFor(what, read, done, timeoutMs);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await capiPicture()}`);
  }
}

/** The TerraformMachines Cluster API cloned for the MachineDeployment `md`. */
function mdMachines(): Promise<ObservedObject[]> {
  return list('terraformmachines', `${CAPI_GROUP}/deployment-name=md`);
}

/** The Machines of the MachineDeployment `md`. */
function capiMachines(): Promise<CapiObject[]> {
  return list<CapiObject>('machines.cluster.x-k8s.io', `${CAPI_GROUP}/deployment-name=md`);
}

function ready(object: ObservedObject): boolean {
  return (
    conditionOf(object, 'Ready')?.status === 'True' &&
    object.status?.activeJob === undefined &&
    object.metadata.deletionTimestamp === undefined
  );
}

/**
 * Waits until the MachineDeployment has exactly `count` TerraformMachines, all Ready with a providerID,
 * and as many Machines, each Provisioned with its TerraformMachine's providerID (none deleting).
 */
async function waitMdSettled(
  count: number,
  timeoutMs: number,
  extra: (machines: ObservedObject[]) => boolean = () => true,
): Promise<{ machines: ObservedObject[]; capi: CapiObject[] }> {
  return waitCapi(
    `${count} TerraformMachines of md Ready and their Machines Provisioned`,
    async () => ({ machines: await mdMachines(), capi: await capiMachines() }),
    ({ machines, capi }) =>
      machines.length === count &&
      capi.length === count &&
      machines.every((m) => ready(m) && m.spec.providerID !== undefined) &&
      extra(machines) &&
      capi.every(
        (m) =>
          m.status?.phase === 'Provisioned' &&
          m.metadata.deletionTimestamp === undefined &&
          machines.some((t) => t.spec.providerID === m.spec.providerID),
      ),
    timeoutMs,
  );
}

/** The decoded outputs of an object's Terraform state (the kubernetes backend's gzip'd `data.tfstate`). */
async function stateOutputs(stateSuffix: string): Promise<Record<string, { value: unknown }>> {
  const secret = JSON.parse(
    await run.kubectl.run(['get', 'secret', stateSecretName(stateSuffix), '-n', run.namespace, '-o', 'json']),
  ) as { data: { tfstate: string } };
  const state = JSON.parse(gunzipSync(Buffer.from(secret.data.tfstate, 'base64')).toString('utf8')) as {
    outputs: Record<string, { value: unknown }>;
  };
  return state.outputs;
}

/** Every Event of the namespace. */
async function namespaceEvents(): Promise<(ObservedEvent & { involvedObject: { uid?: string } })[]> {
  return list('events');
}

/** `<op> Job <name>` of a JobCreated/JobSucceeded message. */
function jobOfMessage(message: string | undefined): { op: string; job: string } | undefined {
  const match = /^(apply|destroy|drift|refresh) Job (captf-\S+)/.exec(message ?? '');
  return match ? { op: match[1] ?? '', job: match[2] ?? '' } : undefined;
}

/** The destroy Jobs that ran for `name` (from its Events: the Jobs go with the object). */
async function destroysOf(name: string): Promise<{ created: string[]; succeeded: string[] }> {
  const events = await eventsOf(run, name);
  const jobs = (reason: string) =>
    events
      .filter((e) => e.reason === reason)
      .map((e) => jobOfMessage(e.message))
      .filter((j) => j?.op === 'destroy')
      .map((j) => j?.job ?? '');
  return { created: jobs('JobCreated'), succeeded: jobs('JobSucceeded') };
}

/** Jobs of the namespace that are not finished, by owner name. */
async function activeJobOwners(): Promise<string[]> {
  const jobs = await list<{
    metadata: { labels?: Record<string, string> };
    status?: { succeeded?: number; failed?: number };
  }>('jobs');
  return jobs
    .filter((job) => !job.status?.succeeded && !job.status?.failed)
    .map((job) => job.metadata.labels?.['captf.io/owner-name'] ?? '');
}

/** The handlers' step lines of one object (info level: the steps that act), with the event that led there. */
function stepLines(name: string): { atMs: number; action: string; eventKind?: string }[] {
  return readFileSync(join(run.controller.logDir, 'controller.log'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.name === name && String(entry.msg).startsWith('step '))
    .map((entry) => ({
      atMs: Date.parse(String(entry.time)),
      action: String(entry.action),
      ...(typeof entry.eventKind === 'string' ? { eventKind: entry.eventKind } : {}),
    }));
}

/** Every file under `dir` (recursively). */
function filesUnder(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

function terraformCluster(): Record<string, unknown> {
  return {
    apiVersion: INFRA_VERSION,
    kind: 'TerraformCluster',
    metadata: { name: CLUSTER, namespace: run.namespace },
    spec: {
      source: { image: 'captf.local/sample-cluster:1' },
      variables: { name: CLUSTER, cidr: CIDR },
      jobs: pinnedJobs(run),
      defaults: { jobs: pinnedJobs(run) },
    },
  };
}

function capiCluster(): Record<string, unknown> {
  return {
    apiVersion: `${CAPI_GROUP}/v1beta2`,
    kind: 'Cluster',
    metadata: { name: CLUSTER, namespace: run.namespace },
    spec: { infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformCluster', name: CLUSTER } },
  };
}

function machineTemplate(name: string, variables: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: INFRA_VERSION,
    kind: 'TerraformMachineTemplate',
    metadata: { name, namespace: run.namespace },
    spec: {
      template: {
        spec: {
          source: { image: 'captf.local/sample-machine:1' },
          variables,
          jobs: pinnedJobs(run),
        },
      },
    },
  };
}

function machineDeployment(template: string, replicas: number): Record<string, unknown> {
  const labels = { [`${CAPI_GROUP}/deployment-name`]: 'md' };
  return {
    apiVersion: `${CAPI_GROUP}/v1beta2`,
    kind: 'MachineDeployment',
    metadata: { name: 'md', namespace: run.namespace },
    spec: {
      clusterName: CLUSTER,
      replicas,
      selector: { matchLabels: labels },
      // No Node ever joins, so no new Machine becomes available: with the default maxUnavailable 0 a
      // rollout would never remove an old Machine.
      rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } } },
      template: {
        metadata: { labels },
        spec: {
          clusterName: CLUSTER,
          version: 'v1.36.0',
          bootstrap: { dataSecretName: BOOTSTRAP_SECRET },
          infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformMachineTemplate', name: template },
        },
      },
    },
  };
}

beforeAll(async () => {
  run = await startE2eRun('capi');
  await applyObjects(run, [workloadKubeconfigSecret(CLUSTER, run.namespace)]);
}, 2 * MINUTE);

afterAll(async () => {
  await run?.close();
}, MINUTE);

describe('the sample driven by Cluster API v1.14.2 (issue 11, DESIGN.md section 2)', () => {
  it(
    'a Cluster over a TerraformCluster reaches Provisioned with the controlPlaneEndpoint our module made',
    async () => {
      // The standalone machine of the restore test applies meanwhile, off the cluster's path.
      await applyObjects(run, [terraformCluster(), capiCluster(), machine(run, RESTORED, {})]);
      const cluster = await waitCapi(
        'the Cluster Provisioned',
        () => getCapi('clusters.cluster.x-k8s.io', CLUSTER),
        (c) =>
          c?.status?.phase === 'Provisioned' && c.status.initialization?.infrastructureProvisioned === true,
        3 * MINUTE,
      );
      expect(cluster?.spec.controlPlaneEndpoint).toEqual(ENDPOINT);
      const ours = await waitReady(run, RESOURCE.TerraformCluster, CLUSTER, MINUTE);
      expect(ours.spec.controlPlaneEndpoint).toEqual(ENDPOINT);
      expect(ours.status?.initialization?.provisioned).toBe(true);
      // The module's other contract outputs: the exports its members get, and the failure domains Cluster
      // API copies from the infrastructure cluster.
      expect(ours.status?.exports).toEqual({
        cidr: CIDR,
        network_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
      const zones = [
        { name: 'zone-a', controlPlane: true },
        { name: 'zone-b', controlPlane: true },
      ];
      expect(ours.status?.failureDomains).toEqual(zones);
      const withZones = await waitCapi(
        'the Cluster lists the failure domains',
        () => getCapi('clusters.cluster.x-k8s.io', CLUSTER),
        (c) => (c?.status?.failureDomains?.length ?? 0) === zones.length,
        MINUTE,
      );
      expect(withZones?.status?.failureDomains).toEqual(zones);
      expect(ours.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'Cluster', name: CLUSTER, uid: cluster?.metadata.uid }),
      ]);
      expect(ours.status?.stateSuffix).toBe(`c-${CLUSTER}`);
      expect(await jobsOf(run, CLUSTER)).toHaveLength(1);
    },
    4 * MINUTE,
  );

  it(
    'a MachineDeployment of 2 over a TerraformMachineTemplate: both clones wait for the bootstrap data, then run with it; both Machines reach Provisioned with their providerIDs',
    async () => {
      await applyObjects(run, [machineTemplate('tmpl-1', {}), machineDeployment('tmpl-1', 2)]);
      // Machine.spec.bootstrap.dataSecretName names a Secret that does not exist yet: each clone waits.
      const waiting = await waitCapi(
        'both clones waiting for bootstrap data',
        mdMachines,
        (machines) =>
          machines.length === 2 && machines.every((m) => m.status?.waitReason === 'WaitingForBootstrapData'),
        2 * MINUTE,
      );
      for (const m of waiting) {
        expect(m.metadata.annotations?.[`${CAPI_GROUP}/cloned-from-name`]).toBe('tmpl-1');
        expect(m.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Machine' })]);
        expect(await jobsOf(run, m.metadata.name)).toEqual([]);
      }

      await applyObjects(run, [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          // As a bootstrap provider writes it: its type is what the Secret events source watches, and
          // that event wakes the waiting clones (DESIGN.md section 6).
          metadata: {
            name: BOOTSTRAP_SECRET,
            namespace: run.namespace,
            labels: { [`${CAPI_GROUP}/cluster-name`]: CLUSTER },
          },
          type: 'cluster.x-k8s.io/secret',
          stringData: { value: BOOTSTRAP_DATA, format: 'cloud-config' },
        },
      ]);
      const { machines, capi } = await waitMdSettled(2, 3 * MINUTE);
      const digest = createHash('sha256').update(BOOTSTRAP_DATA).digest('hex');
      for (const m of machines) {
        const owner = m.metadata.ownerReferences?.find((ref) => ref.kind === 'Machine');
        // machine_name reached the module: the sample names its server after the Machine.
        expect(m.spec.providerID).toMatch(new RegExp(`^captf-local://${owner?.name}/[0-9a-f-]{36}$`));
        expect(m.status?.initialization?.provisioned).toBe(true);
        // Its address is in its cluster's network: the cluster's exports reached its module.
        expect(m.status?.addresses?.[0]?.address).toMatch(/^10\.30\./);
        expect(m.status?.stateSuffix).toBe(`m-${m.metadata.name}`);
        const outputs = await stateOutputs(m.status?.stateSuffix ?? '');
        expect(outputs.bootstrap_data_sha256?.value).toBe(digest);
        expect(await jobsOf(run, m.metadata.name)).toHaveLength(1);
      }
      expect(capi.map((m) => m.spec.providerID).sort()).toEqual(
        machines.map((m) => m.spec.providerID).sort(),
      );
    },
    5 * MINUTE,
  );

  it(
    'scaled to 3, then to 1: the TerraformMachines Cluster API deletes are destroyed and their finalizers removed',
    async () => {
      await patchObject(run, 'machinedeployments', 'md', { spec: { replicas: 3 } });
      const three = await waitMdSettled(3, 3 * MINUTE);
      await patchObject(run, 'machinedeployments', 'md', { spec: { replicas: 1 } });
      const one = await waitMdSettled(1, 3 * MINUTE);
      const kept = one.machines[0]?.metadata.name;
      const deleted = three.machines.map((m) => m.metadata.name).filter((name) => name !== kept);
      expect(deleted).toHaveLength(2);
      for (const name of deleted) {
        expect(await readObject(run, RESOURCE.TerraformMachine, name)).toBeUndefined();
        const destroys = await waitCapi(
          `the destroy Job of ${name} in its Events`,
          () => destroysOf(name),
          (d) => d.succeeded.length > 0,
          MINUTE,
        );
        expect(destroys.created).toHaveLength(1);
        expect(destroys.succeeded).toEqual(destroys.created);
        // Issue 23 item 3: OpenTofu's destroy left an empty state, so nothing of the machine outlives it:
        // not its state Secret and lock Lease (deleted before the finalizer), nor what it owned (collected).
        const suffix = nameStateSuffix('TerraformMachine', name);
        const left = await waitCapi(
          `nothing of ${name} left`,
          () => perObjectLeft(suffix),
          (names) => names.length === 0,
          MINUTE,
        );
        expect(left).toEqual([]);
      }
    },
    6 * MINUTE,
  );

  it(
    'a template change rolls out: a new machine from the new template is created, the old one destroyed',
    async () => {
      const [old] = await mdMachines();
      await applyObjects(run, [machineTemplate('tmpl-2', { size: 'large' })]);
      await patchObject(run, 'machinedeployments', 'md', {
        spec: { template: { spec: { infrastructureRef: { name: 'tmpl-2' } } } },
      });
      const { machines } = await waitMdSettled(
        1,
        3 * MINUTE,
        (ms) => ms[0]?.metadata.annotations?.[`${CAPI_GROUP}/cloned-from-name`] === 'tmpl-2',
      );
      expect(machines[0]?.metadata.name).not.toBe(old?.metadata.name);
      expect(machines[0]?.spec.variables).toEqual({ size: 'large' });
      const destroys = await waitCapi(
        `the destroy Job of ${old?.metadata.name}`,
        () => destroysOf(old?.metadata.name ?? ''),
        (d) => d.succeeded.length > 0,
        MINUTE,
      );
      expect(destroys.created).toHaveLength(1);
    },
    4 * MINUTE,
  );

  it(
    'a MachinePool over a TerraformMachinePool, scaled from 1 to 3: 3 entries in spec.providerIDList, status.replicas 3',
    async () => {
      await applyObjects(run, [
        {
          apiVersion: INFRA_VERSION,
          kind: 'TerraformMachinePool',
          // Written by hand for the MachinePool (no template), labelled with its cluster: it waits for
          // the MachinePool to adopt it rather than applying once without its replicas and bootstrap data.
          metadata: {
            name: 'mp',
            namespace: run.namespace,
            labels: { [`${CAPI_GROUP}/cluster-name`]: CLUSTER },
          },
          spec: {
            source: { image: 'captf.local/sample-pool:1' },
            jobs: pinnedJobs(run),
          },
        },
        {
          apiVersion: `${CAPI_GROUP}/v1beta2`,
          kind: 'MachinePool',
          metadata: { name: 'mp', namespace: run.namespace },
          spec: {
            clusterName: CLUSTER,
            replicas: 1,
            template: {
              spec: {
                clusterName: CLUSTER,
                version: 'v1.36.0',
                bootstrap: { dataSecretName: BOOTSTRAP_SECRET },
                infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformMachinePool', name: 'mp' },
              },
            },
          },
        },
      ]);
      await waitCapi(
        'the MachinePool with 1 providerID',
        () => getCapi('machinepools.cluster.x-k8s.io', 'mp'),
        (p) => p?.spec.providerIDList?.length === 1 && p.status?.replicas === 1,
        3 * MINUTE,
      );
      const first = await waitReady(run, RESOURCE.TerraformMachinePool, 'mp', MINUTE);
      expect(first.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'MachinePool' })]);
      // One apply, already with the MachinePool's inputs (replicas 1).
      expect(await jobsOf(run, 'mp')).toHaveLength(1);
      // The run's own Job and pod events are over: from here only the MachinePool's change can wake the
      // pool (its next requeue is the drift check, half an hour away).
      await sleep(5_000);
      const scaledAtMs = Date.now();
      await patchObject(run, 'machinepools.cluster.x-k8s.io', 'mp', { spec: { replicas: 3 } });
      const pool = await waitCapi(
        'the MachinePool with 3 providerIDs',
        () => getCapi('machinepools.cluster.x-k8s.io', 'mp'),
        (p) => p?.spec.providerIDList?.length === 3 && p.status?.replicas === 3,
        MINUTE,
      );
      const ours = await waitReady(run, RESOURCE.TerraformMachinePool, 'mp', MINUTE);
      expect(ours.spec.providerIDList).toEqual(pool?.spec.providerIDList);
      expect(ours.status?.replicas).toBe(3);
      expect(new Set(ours.spec.providerIDList).size).toBe(3);
      expect(ours.status?.lastRun).toMatchObject({ op: 'apply', attempt: 2, plan: { add: 2, destroy: 0 } });
      expect(await jobsOf(run, 'mp')).toHaveLength(2);
      // The MachinePool's own event started the scale-up (the relay watches Cluster API's objects).
      const started = stepLines('mp').filter((line) => line.action === 'created' && line.atMs >= scaledAtMs);
      expect(started.map((line) => line.eventKind)).toEqual(['MachinePool']);
    },
    5 * MINUTE,
  );

  it(
    'a paused Cluster starts nothing (a changed variable waits as Paused, every object shows Paused True); unpaused, it proceeds',
    async () => {
      const [target] = await mdMachines();
      const name = target?.metadata.name ?? '';
      const jobsBefore = await jobsOf(run, name);
      await patchObject(run, 'clusters.cluster.x-k8s.io', CLUSTER, { spec: { paused: true } });
      await waitCapi(
        'the Cluster Paused',
        () => getCapi('clusters.cluster.x-k8s.io', CLUSTER),
        (c) =>
          c?.status?.conditions?.some((cond) => cond.type === 'Paused' && cond.status === 'True') === true,
        MINUTE,
      );
      await patchObject(run, RESOURCE.TerraformMachine, name, { spec: { variables: { size: 'xlarge' } } });
      const paused = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'the changed machine waiting as Paused',
        (o) => o.status?.waitReason === 'Paused' && conditionOf(o, 'Paused')?.status === 'True',
        MINUTE,
      );
      expect(paused.status?.activeJob).toBeUndefined();
      for (const [resource, other] of [
        [RESOURCE.TerraformCluster, CLUSTER],
        [RESOURCE.TerraformMachinePool, 'mp'],
      ] as const) {
        await waitObject(
          run,
          resource,
          other,
          `${other} showing Paused True`,
          (o) => conditionOf(o, 'Paused')?.status === 'True',
          MINUTE,
        );
      }
      // Nothing starts while paused: watched for 15 s, past the relay's and the timer's reaction times.
      await sleep(15_000);
      expect(await jobsOf(run, name)).toEqual(jobsBefore);
      expect(await activeJobOwners()).toEqual([]);

      await patchObject(run, 'clusters.cluster.x-k8s.io', CLUSTER, { spec: { paused: false } });
      const applied = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'the changed machine applied once unpaused',
        (o) =>
          ready(o) &&
          o.status?.lastRun?.inputsHash !== target?.status?.lastRun?.inputsHash &&
          conditionOf(o, 'Paused')?.status === 'False',
        2 * MINUTE,
      );
      expect(applied.status?.lastRun).toMatchObject({ op: 'apply', plan: { add: 0, change: 1, destroy: 0 } });
      expect(applied.spec.providerID).toBe(target?.spec.providerID);
      expect(await jobsOf(run, name)).toHaveLength(jobsBefore.length + 1);
    },
    4 * MINUTE,
  );

  it(
    'deleting the Cluster destroys everything: destroy Jobs run and every object is gone',
    async () => {
      const owned = [...(await mdMachines()).map((m) => m.metadata.name), 'mp', CLUSTER];
      await run.kubectl.run([
        'delete',
        'clusters.cluster.x-k8s.io',
        CLUSTER,
        '-n',
        run.namespace,
        '--wait=false',
      ]);
      await waitCapi(
        'every Cluster API object and every one of ours (but the standalone machine) gone',
        async () => ({
          capi: await list<CapiObject>(
            'clusters.cluster.x-k8s.io,machinedeployments,machinesets,machines.cluster.x-k8s.io,machinepools.cluster.x-k8s.io',
          ),
          ours: (await list('terraformclusters,terraformmachines,terraformmachinepools'))
            .map((o) => o.metadata.name)
            .filter((n) => n !== RESTORED),
        }),
        ({ capi, ours }) => capi.length === 0 && ours.length === 0,
        4 * MINUTE,
      );
      for (const name of owned) {
        const destroys = await waitCapi(
          `the destroy Job of ${name}`,
          () => destroysOf(name),
          (d) => d.succeeded.length > 0,
          MINUTE,
        );
        expect(destroys.created).toHaveLength(1);
      }
    },
    5 * MINUTE,
  );

  it(
    'an object re-created from a backup (new UID, same namespace and name, its state Secret restored) finds its state: its next apply plans no changes',
    async () => {
      const before = await waitReady(run, RESOURCE.TerraformMachine, RESTORED, 2 * MINUTE);
      const suffix = before.status?.stateSuffix ?? '';
      expect(suffix).toBe(`m-${RESTORED}`);
      const backup = JSON.parse(
        await run.kubectl.run(['get', 'secret', stateSecretName(suffix), '-n', run.namespace, '-o', 'json']),
      ) as { metadata: Record<string, unknown>; type: string; data: Record<string, string> };
      // The management cluster loses the object (no destroy runs: the finalizer goes first) and its state
      // Secret; the backup brings both back. A restore re-creates the object from its spec (the API server
      // drops a created object's status), so it has a new UID and no status.
      await patchObject(run, RESOURCE.TerraformMachine, RESTORED, { metadata: { finalizers: null } });
      await run.kubectl.run(['delete', 'terraformmachine', RESTORED, '-n', run.namespace]);
      // Already gone when a step re-added our finalizer in between and the object was destroyed: its empty
      // state goes with its finalizer (issue 23 item 3). Lost either way; the backup brings it back.
      await run.kubectl.run([
        'delete',
        'secret',
        stateSecretName(suffix),
        '-n',
        run.namespace,
        '--ignore-not-found',
      ]);
      // The old object's Jobs go with it (owner references): a restored cluster has none.
      await waitCapi(
        'the old Jobs collected',
        () => jobsOf(run, RESTORED),
        (jobs) => jobs.length === 0,
        MINUTE,
      );
      const { labels, annotations } = backup.metadata as {
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
      };
      await applyObjects(run, [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          type: backup.type,
          metadata: { name: stateSecretName(suffix), namespace: run.namespace, labels, annotations },
          data: backup.data,
        },
        machine(run, RESTORED, {}),
      ]);
      const restored = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        RESTORED,
        'the restored machine applied',
        (o) => o.metadata.uid !== before.metadata.uid && ready(o) && o.status?.lastRun !== undefined,
        2 * MINUTE,
      );
      expect(restored.status?.stateSuffix).toBe(suffix);
      expect(restored.status?.lastRun).toMatchObject({
        op: 'apply',
        result: 'succeeded',
        plan: { add: 0, change: 0, destroy: 0 },
      });
      expect(restored.spec.providerID).toBe(before.spec.providerID);
    },
    4 * MINUTE,
  );

  it(
    'costs and secrecy: one Job per object, op and attempt, each succeeded; the bootstrap data in no status, Event or log',
    async () => {
      const events = await namespaceEvents();
      const created = new Map<string, number>();
      const succeeded = new Set<string>();
      for (const event of events) {
        const job = jobOfMessage(event.message);
        if (job === undefined) continue;
        const attempt = /-a(\d+)-[0-9a-f]{6}$/.exec(job.job)?.[1];
        const key = `${event.involvedObject.uid}/${job.op}/a${attempt}`;
        if (event.reason === 'JobCreated') created.set(key, (created.get(key) ?? 0) + 1);
        if (event.reason === 'JobSucceeded') succeeded.add(key);
      }
      expect(created.size).toBeGreaterThan(10);
      expect([...created.entries()].filter(([, count]) => count > 1)).toEqual([]);
      expect([...created.keys()].filter((key) => !succeeded.has(key))).toEqual([]);
      expect(events.filter((e) => e.reason === 'JobFailed')).toEqual([]);

      expect(JSON.stringify(events)).not.toContain(CANARY);
      const ours = await list('terraformmachines,terraformmachinepools,terraformclusters');
      expect(JSON.stringify(ours)).not.toContain(CANARY);
      // The handlers', relay's and node's logs (kubelet, containerd), and the container logs of the pods
      // still there as the kubelet serves them (the pod's mounted per-run Secret carries the data to the
      // module by design; what the containers print must not).
      const files = filesUnder(run.controller.logDir);
      expect(files.length).toBeGreaterThan(3);
      for (const file of files) expect(readFileSync(file, 'utf8').includes(CANARY), file).toBe(false);
      const pods = JSON.parse(await run.kubectl.run(['get', 'pods', '-n', run.namespace, '-o', 'json'])) as {
        items: { metadata: { name: string }; spec: { initContainers?: { name: string }[] } }[];
      };
      const containerLogs = await Promise.all(
        pods.items.flatMap((pod) =>
          ['source', ...(pod.spec.initContainers ?? []).map((c) => c.name)].map(async (container) => ({
            where: `${pod.metadata.name}/${container}`,
            text: await containerLog(run, pod.metadata.name, container),
          })),
        ),
      );
      expect(containerLogs.filter((log) => log.text !== '').length).toBeGreaterThan(0);
      for (const log of containerLogs) expect(log.text.includes(CANARY), log.where).toBe(false);
    },
    MINUTE,
  );
});
