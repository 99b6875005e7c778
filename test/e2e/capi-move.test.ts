import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCK_MOVE_ANNOTATION } from '../../src/core/block-move.ts';
import { CLUSTERCTL_MOVE_LABEL } from '../../src/core/run-secret-manifest.ts';
import { locateBinaries } from '../../src/local/binaries.ts';
import { type CapiManager, startCapiManager } from '../../src/local/capi-manager.ts';
import { type ControlPlane, startControlPlane } from '../../src/local/control-plane.ts';
import { type Kubectl, kubectlFor } from '../../src/local/kubectl.ts';
import { type LocalController, startLocalController } from '../../src/local/local-controller.ts';
import type { StackInfo } from '../../src/local/stack.ts';
import { prepareWorkloadNamespace } from '../../src/local/workload-namespace.ts';
import { testStack } from '../env/index.ts';
import { CAPI_GROUP, workloadKubeconfigSecret } from './capi-fixtures.ts';
import {
  applyObjects,
  conditionOf,
  type E2eRun,
  type E2eScope,
  type ObservedObject,
  patchObject,
  pinnedJobs,
  RESOURCE,
  readObject,
  startE2eRun,
  stateSecretName,
  waitFor,
  waitObject,
} from './harness.ts';
import { expectLifecycleSettled, runScope } from './lifecycle-invariants.ts';

// Issue 23 item 6 with the real `clusterctl move` (v1.14.2, scripts/build-binaries.sh clusterctl): a Cluster
// with its TerraformCluster, a control-plane Machine and a MachineDeployment move from the test stack (the
// source management cluster, its Cluster API manager and the local run's handlers) to a second local
// control plane started here (the target, with its own Cluster API manager, node and handlers) while an
// apply Job of the TerraformCluster runs. The move waits for the block-move annotation, the state Secrets
// move by their label, the target applies once per object with no changes, and nothing runs against the
// source. The target's handlers share the test stack's Redis under their own key prefix: our Redis keys
// name objects by namespace and name, which the two management clusters share during a move.

const MINUTE = 60_000;
const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io';
const INFRA_VERSION = `${INFRA_GROUP}/v1alpha1`;
const CLUSTER = 'mv';
const CONTROL_PLANE = 'mv-cp';
const BOOTSTRAP_SECRET = 'mv-bootstrap-data';
/** Taint of the stand-in workload Nodes: nothing is scheduled there. */
const NODE_TAINT = 'captf.io/move-e2e';
/** Shows nowhere: no object of this file carries a secret value. */
const CANARY = 'move-canary-5d1e';

let run: E2eRun;
let targetDir: string;
let targetPlane: ControlPlane | undefined;
let targetCapi: CapiManager | undefined;
let targetController: LocalController | undefined;
let target: E2eScope;
let targetKubeconfig: string;
const createdNodes: string[] = [];

interface CapiObject {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { paused?: boolean; providerID?: string };
  status?: {
    nodeRef?: { name: string };
    initialization?: { infrastructureProvisioned?: boolean };
    conditions?: { type: string; status: string }[];
  };
}

async function list<T = ObservedObject>(scope: E2eScope, resource: string, selector?: string): Promise<T[]> {
  const out = await scope.kubectl.run([
    'get',
    resource,
    '-n',
    scope.namespace,
    ...(selector === undefined ? [] : ['-l', selector]),
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as { items: T[] }).items;
}

/** Our objects of the moved cluster (label `cluster.x-k8s.io/cluster-name`), by kind and name. */
async function oursOf(scope: E2eScope): Promise<ObservedObject[]> {
  return list(scope, 'terraformclusters,terraformmachines', `${CAPI_GROUP}/cluster-name=${CLUSTER}`).then(
    async (labelled) => {
      // The TerraformCluster carries no cluster-name label until Cluster API sets it; read it by name too.
      const cluster = await readObject(scope, RESOURCE.TerraformCluster, CLUSTER);
      const names = new Set(labelled.map((o) => o.metadata.name));
      return cluster && !names.has(CLUSTER) ? [cluster, ...labelled] : labelled;
    },
  );
}

function machines(scope: E2eScope): Promise<ObservedObject[]> {
  return list(scope, 'terraformmachines', `${CAPI_GROUP}/cluster-name=${CLUSTER}`);
}

/** Jobs of the namespace by owner name: all, and the ones not finished. */
async function jobsByOwner(scope: E2eScope): Promise<{ all: string[]; running: string[] }> {
  const jobs = await list<{
    metadata: { labels?: Record<string, string> };
    status?: { succeeded?: number; failed?: number };
  }>(scope, 'jobs');
  const owner = (job: (typeof jobs)[number]) => job.metadata.labels?.['captf.io/owner-name'] ?? '';
  return {
    all: jobs.map(owner).sort(),
    running: jobs.filter((job) => !job.status?.succeeded && !job.status?.failed).map(owner),
  };
}

/**
 * Ready with nothing running: no active Job, and no block-move annotation (it goes after the bookkeeping's
 * status write, so an object can show Ready a moment before it is gone).
 */
function ready(object: ObservedObject): boolean {
  return (
    conditionOf(object, 'Ready')?.status === 'True' &&
    object.status?.activeJob === undefined &&
    object.metadata.annotations?.[BLOCK_MOVE_ANNOTATION] === undefined
  );
}

function sourceObjects(): Record<string, unknown>[] {
  const bootstrap = { dataSecretName: BOOTSTRAP_SECRET };
  const machineSpec = (infra: { kind: string; name: string }) => ({
    clusterName: CLUSTER,
    version: 'v1.36.0',
    bootstrap,
    infrastructureRef: { apiGroup: INFRA_GROUP, ...infra },
  });
  const mdLabels = { [`${CAPI_GROUP}/deployment-name`]: 'mv-md' };
  return [
    workloadKubeconfigSecret(CLUSTER, run.namespace),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      // A bootstrap provider's data Secret is owned by its config, which moves; this hand-made one carries
      // clusterctl's move label instead, or the machines would wait for it in the target.
      metadata: { name: BOOTSTRAP_SECRET, namespace: run.namespace, labels: { [CLUSTERCTL_MOVE_LABEL]: '' } },
      stringData: { value: '#cloud-config\n', format: 'cloud-config' },
    },
    {
      apiVersion: INFRA_VERSION,
      kind: 'TerraformCluster',
      metadata: { name: CLUSTER, namespace: run.namespace },
      spec: {
        source: { image: 'captf.local/sample-cluster:1' },
        variables: { name: CLUSTER },
        jobs: pinnedJobs(run),
        defaults: { jobs: pinnedJobs(run) },
      },
    },
    {
      apiVersion: `${CAPI_GROUP}/v1beta2`,
      kind: 'Cluster',
      metadata: { name: CLUSTER, namespace: run.namespace },
      spec: { infrastructureRef: { apiGroup: INFRA_GROUP, kind: 'TerraformCluster', name: CLUSTER } },
    },
    {
      apiVersion: INFRA_VERSION,
      kind: 'TerraformMachine',
      metadata: {
        name: CONTROL_PLANE,
        namespace: run.namespace,
        labels: { [`${CAPI_GROUP}/cluster-name`]: CLUSTER },
      },
      spec: { source: { image: 'captf.local/sample-machine:1' }, jobs: pinnedJobs(run) },
    },
    {
      // No control plane provider: a control-plane Machine of its own, so that the Cluster's control plane
      // counts as initialized once it has a Node (clusterctl move refuses a cluster still provisioning).
      apiVersion: `${CAPI_GROUP}/v1beta2`,
      kind: 'Machine',
      metadata: {
        name: CONTROL_PLANE,
        namespace: run.namespace,
        labels: { [`${CAPI_GROUP}/cluster-name`]: CLUSTER, [`${CAPI_GROUP}/control-plane`]: '' },
      },
      spec: machineSpec({ kind: 'TerraformMachine', name: CONTROL_PLANE }),
    },
    {
      apiVersion: INFRA_VERSION,
      kind: 'TerraformMachineTemplate',
      metadata: { name: 'mv-tmpl', namespace: run.namespace },
      spec: {
        template: { spec: { source: { image: 'captf.local/sample-machine:1' }, jobs: pinnedJobs(run) } },
      },
    },
    {
      apiVersion: `${CAPI_GROUP}/v1beta2`,
      kind: 'MachineDeployment',
      metadata: { name: 'mv-md', namespace: run.namespace },
      spec: {
        clusterName: CLUSTER,
        replicas: 1,
        selector: { matchLabels: mdLabels },
        template: {
          metadata: { labels: mdLabels },
          spec: machineSpec({ kind: 'TerraformMachineTemplate', name: 'mv-tmpl' }),
        },
      },
    },
  ];
}

/** The second management cluster: control plane, Cluster API manager, our CRDs, node and handlers. */
async function startTarget(): Promise<void> {
  const stack = testStack();
  const binaries = locateBinaries();
  targetDir = mkdtempSync(join(tmpdir(), 'captf-e2e-move-target-'));
  targetPlane = await startControlPlane({ binaries, workDir: join(targetDir, 'plane') });
  targetKubeconfig = targetPlane.kubeconfigPath;
  const kubectl = kubectlFor(stack.kubectlPath, targetKubeconfig);
  const info: StackInfo = {
    ...stack,
    kubeconfigPath: targetPlane.kubeconfigPath,
    apiServerUrl: targetPlane.apiServerUrl,
    adminToken: targetPlane.adminToken,
    caPath: targetPlane.caPath,
    kubeletTls: targetPlane.kubeletTls,
    workDir: targetDir,
  };
  delete info.capi;
  mkdirSync(join(targetDir, 'capi'), { recursive: true });
  targetCapi = await startCapiManager({
    kubeconfigPath: targetKubeconfig,
    files: stack.capiFiles,
    version: stack.versions.clusterApi,
    kubectl,
    dir: join(targetDir, 'capi'),
    logDir: join(targetDir, 'plane', 'logs'),
  });
  // The same node name as the source's: the moved specs pin their Jobs to it.
  targetController = await startLocalController({
    stack: info,
    workDir: join(targetDir, 'controller'),
    nodeName: run.nodeName,
    keyPrefix: `${run.keyPrefix}-target`,
    watchNamespaces: [run.namespace],
    tickIntervalMs: 1000,
  });
  await prepareWorkloadNamespace(kubectl, run.namespace, info);
  target = { namespace: run.namespace, nodeName: run.nodeName, kubectl };
}

/** What `clusterctl init` installs besides the providers: the provider inventory's CRD. */
async function installInventory(kubectl: Kubectl): Promise<void> {
  await kubectl.run(['apply', '--server-side', '-f', testStack().capiFiles.inventoryCrd]);
}

/** A running `clusterctl move`, its output so far, and its exit. */
interface MoveRun {
  child: ChildProcess;
  output(): string;
  exit: Promise<number | null>;
}

function startMove(): MoveRun {
  const home = join(targetDir, 'clusterctl-home');
  mkdirSync(home, { recursive: true });
  let output = '';
  const child = spawn(
    testStack().capiFiles.clusterctl,
    [
      'move',
      '--kubeconfig',
      testStack().kubeconfigPath,
      '--to-kubeconfig',
      targetKubeconfig,
      '--namespace',
      run.namespace,
      '-v',
      '1',
    ],
    {
      env: { PATH: process.env.PATH ?? '', HOME: home, CLUSTERCTL_DISABLE_VERSIONCHECK: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exit };
}

beforeAll(async () => {
  run = await startE2eRun('move');
  await Promise.all([startTarget(), installInventory(run.kubectl)]);
  await installInventory(target.kubectl);
}, 5 * MINUTE);

afterAll(async () => {
  for (const node of createdNodes)
    await run?.kubectl.run(['delete', 'node', node, '--ignore-not-found']).catch(() => undefined);
  await run?.kubectl.run(['uncordon', run.nodeName]).catch(() => undefined);
  await targetController?.stop();
  await targetCapi?.stop();
  await targetPlane?.stop();
  if (targetDir && !process.env.CAPTF_KEEP_STACK) rmSync(targetDir, { recursive: true, force: true });
  await run?.close();
}, 2 * MINUTE);

describe('clusterctl move of a Cluster over our objects (issue 23 item 6)', () => {
  it(
    'the source cluster provisions: the Cluster, its control-plane Machine and its MachineDeployment, each Machine with a Node',
    async () => {
      await applyObjects(run, sourceObjects());
      const ours = await waitFor(
        'the TerraformCluster and both TerraformMachines Ready with their providerIDs',
        () => oursOf(run),
        (objects) =>
          objects.length === 3 &&
          objects.every(ready) &&
          objects.filter((o) => o.spec.providerID !== undefined).length === 2,
        4 * MINUTE,
      );
      // Every state Secret carries clusterctl's move label, the cluster's too (its first apply may have
      // started before Cluster API owned it: the bookkeeping labels it then).
      for (const object of ours) {
        const secret = JSON.parse(
          await run.kubectl.run([
            'get',
            'secret',
            stateSecretName(object.status?.stateSuffix ?? ''),
            '-n',
            run.namespace,
            '-o',
            'json',
          ]),
        ) as { metadata: { labels?: Record<string, string> } };
        expect(secret.metadata.labels, object.metadata.name).toHaveProperty([CLUSTERCTL_MOVE_LABEL], '');
      }
      // The workload cluster's Nodes (the source API server stands in for it): one per machine, by
      // providerID, never scheduled on.
      for (const machine of ours.filter((o) => o.spec.providerID !== undefined)) {
        const name = `${run.namespace}-${machine.metadata.name}`.slice(0, 63);
        createdNodes.push(name);
        await applyObjects(run, [
          {
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name },
            spec: {
              providerID: machine.spec.providerID,
              unschedulable: true,
              taints: [{ key: NODE_TAINT, effect: 'NoSchedule' }],
            },
          },
        ]);
      }
      // Cluster API's Machine controller finds a Node by a watch it opens through its ClusterCache; a Node
      // made before that watch exists may go unseen until the Machine is reconciled for another reason, so
      // each poll without a nodeRef touches the Machine (an annotation only Cluster API's watch reads).
      let polls = 0;
      await waitFor(
        'both Machines with a nodeRef and the Cluster control plane initialized',
        async () => {
          const all = await list<CapiObject>(run, 'machines.cluster.x-k8s.io');
          polls += 1;
          if (polls % 10 === 0)
            for (const m of all.filter((m) => m.status?.nodeRef?.name === undefined))
              await run.kubectl.run([
                'annotate',
                '--overwrite',
                'machines.cluster.x-k8s.io',
                m.metadata.name,
                '-n',
                run.namespace,
                `captf.io/e2e-poll=${polls}`,
              ]);
          return { machines: all, cluster: (await list<CapiObject>(run, 'clusters.cluster.x-k8s.io'))[0] };
        },
        ({ machines: all, cluster }) =>
          all.length === 2 &&
          all.every((m) => m.status?.nodeRef?.name !== undefined) &&
          cluster?.status?.conditions?.some(
            (c) => c.type === 'ControlPlaneInitialized' && c.status === 'True',
          ) === true,
        3 * MINUTE,
      );
    },
    8 * MINUTE,
  );

  it(
    'moves while an apply Job of the TerraformCluster runs: the move waits for block-move, then the state moves, the target applies once per object with no changes, and nothing runs against the source',
    async () => {
      const before = await oursOf(run);
      const sourceStates = before.map((o) => stateSecretName(o.status?.stateSuffix ?? ''));
      // The plan keys (DESIGN.md section 11): owned by their objects, so they move with them.
      const planKeyOf = async (scope: E2eScope, suffix: string) =>
        (
          JSON.parse(
            await scope.kubectl.run([
              'get',
              'secret',
              `captf-plan-key-${suffix}`,
              '-n',
              run.namespace,
              '-o',
              'json',
            ]),
          ) as { data: Record<string, string> }
        ).data;
      const planKeys = new Map<string, Record<string, string>>();
      for (const object of before) {
        const suffix = object.status?.stateSuffix ?? '';
        planKeys.set(suffix, await planKeyOf(run, suffix));
      }
      // The cluster's apply Job is created but its pod cannot start (the node is cordoned): a run in
      // flight, for as long as the test needs, with no timing involved.
      await run.kubectl.run(['cordon', run.nodeName]);
      await patchObject(run, RESOURCE.TerraformCluster, CLUSTER, { spec: { variables: { name: 'mv-2' } } });
      const running = await waitObject(
        run,
        RESOURCE.TerraformCluster,
        CLUSTER,
        'the TerraformCluster with its apply Job running and block-move set',
        (o) =>
          o.status?.activeJob?.op === 'apply' &&
          o.metadata.annotations?.[BLOCK_MOVE_ANNOTATION] !== undefined,
        MINUTE,
      );
      const inFlight = running.status?.activeJob?.name ?? '';

      const move = startMove();
      try {
        await waitFor(
          'clusterctl waiting for the block-move annotation',
          async () => move.output(),
          (output) => output.includes('Move blocked by clusterctl.cluster.x-k8s.io/block-move annotation'),
          2 * MINUTE,
        );
        // Paused in the source, nothing created in the target yet.
        const paused = (await list<CapiObject>(run, 'clusters.cluster.x-k8s.io'))[0];
        expect(paused?.spec.paused).toBe(true);
        expect(await list(target, 'clusters.cluster.x-k8s.io,terraformclusters,terraformmachines')).toEqual(
          [],
        );

        // The Job runs to its end and is bookkept in the source (a paused object still bookkeeps); the
        // annotation goes and the move goes on.
        await run.kubectl.run(['uncordon', run.nodeName]);
        const code = await Promise.race([
          move.exit,
          new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5 * MINUTE)),
        ]);
        expect(code, move.output()).toBe(0);
        console.log(`[capi-move] clusterctl move:\n${move.output()}`);
      } finally {
        if (move.child.exitCode === null) move.child.kill('SIGTERM');
      }
      const bookkept = await run.kubectl.run([
        'get',
        'events',
        '-n',
        run.namespace,
        '--field-selector',
        'reason=JobSucceeded',
        '-o',
        'jsonpath={.items[*].message}',
      ]);
      expect(bookkept).toContain(inFlight);

      // The source: nothing of the cluster left, its Jobs collected with their owners, none running.
      expect(await list(run, 'clusters.cluster.x-k8s.io,terraformclusters,terraformmachines')).toEqual([]);
      await waitFor(
        'the source Jobs collected',
        () => jobsByOwner(run),
        (jobs) => jobs.all.length === 0,
        MINUTE,
      );

      // The target: every state Secret moved with its label; the Cluster unpaused; each object applies
      // once, from the moved state, with no changes (a state left behind would plan everything anew).
      for (const name of sourceStates) {
        const secret = JSON.parse(
          await target.kubectl.run(['get', 'secret', name, '-n', run.namespace, '-o', 'json']),
        ) as { metadata: { labels?: Record<string, string> }; data?: Record<string, string> };
        expect(secret.metadata.labels, name).toHaveProperty([CLUSTERCTL_MOVE_LABEL], '');
        expect(secret.data?.tfstate, name).toBeDefined();
      }
      for (const [suffix, key] of planKeys) expect(await planKeyOf(target, suffix), suffix).toEqual(key);
      const moved = await waitFor(
        'the moved objects applied once in the target',
        () => oursOf(target),
        (objects) =>
          objects.length === 3 && objects.every((o) => ready(o) && o.status?.lastRun?.op === 'apply'),
        4 * MINUTE,
      );
      for (const object of moved) {
        expect(object.status?.lastRun, object.metadata.name).toMatchObject({
          result: 'succeeded',
          plan: { add: 0, change: 0, destroy: 0 },
        });
        const was = before.find((o) => o.metadata.name === object.metadata.name);
        expect(object.spec.providerID).toBe(was?.spec.providerID);
      }
      expect((await readObject(target, RESOURCE.TerraformCluster, CLUSTER))?.spec.variables).toEqual({
        name: 'mv-2',
      });
      // No duplicate Job: one apply per object in the target, none in the source.
      const targetJobs = await jobsByOwner(target);
      expect(targetJobs.all).toEqual(moved.map((o) => o.metadata.name).sort());
      expect(targetJobs.running).toEqual([]);
      // The lock Lease does not move (clusterctl moves only labelled CRDs' kinds, Secrets and ConfigMaps):
      // the target's first step put a free one back with the runner identity.
      const lease = await target.kubectl.run([
        'get',
        'lease',
        `lock-${stateSecretName(`c-${CLUSTER}`)}`,
        '-n',
        run.namespace,
        '-o',
        'name',
      ]);
      expect(lease.trim()).not.toBe('');
      const cluster = (await list<CapiObject>(target, 'clusters.cluster.x-k8s.io'))[0];
      expect(cluster?.spec.paused).not.toBe(true);
      expect((await machines(target)).length).toBe(2);
      expect(await jobsByOwner(run)).toEqual({ all: [], running: [] });
      // Both management clusters end as every lifecycle scenario does (./lifecycle-invariants.ts): the fault
      // suite's invariants, no pod of ours Terminating, no state Secret or Lease without its object, no object
      // waiting on a finished Job.
      await expectLifecycleSettled(runScope(run, CANARY), 'the source after the move');
      if (!targetController) throw new Error('the target controller did not start');
      await expectLifecycleSettled(
        runScope({ ...target, keyPrefix: `${run.keyPrefix}-target`, controller: targetController }, CANARY),
        'the target after the move',
      );
    },
    10 * MINUTE,
  );
});
