import { randomUUID } from 'node:crypto';
import { arch, release } from 'node:os';
import {
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  V1MicroTime,
  type V1Node,
  type V1NodeCondition,
  type V1Taint,
} from '@kubernetes/client-node';
import { DEDICATED_TAINT_KEY } from '../dedicated-node.ts';
import { httpStatusOf } from './node-api.ts';
import { localNodeIp } from './pod-status.ts';

/**
 * Registers the local node and keeps it Ready like a kubelet: a `v1.Node` (untainted, so the real
 * kube-scheduler binds Job pods to it, unless it is dedicated), its Lease in `kube-node-lease` renewed every 10 s (the kubelet's
 * `nodeLeaseRenewIntervalFraction` 0.25 of 40 s), and its Ready condition heartbeat every 60 s.
 */

/** Label (value `true`) on every Node the local node registers. */
export const LOCAL_NODE_LABEL = 'captf.io/local-node';

function dedicatedTaint(nodeName: string): V1Taint {
  return { key: DEDICATED_TAINT_KEY, value: nodeName, effect: 'NoSchedule' };
}

/** Capacity the node advertises; the scheduler fits pods against it. */
export interface NodeCapacity {
  cpu: string;
  memory: string;
  pods: string;
}

/** What a registered node can do afterwards. */
export interface NodeRegistration {
  /** Stops the heartbeats; the Node object stays (a stopped kubelet does not delete its Node). */
  stop(): void;
  /** Deletes the Node object (its Lease goes with it through the owner reference). */
  unregister(): Promise<void>;
}

const leaseNamespace = 'kube-node-lease';
const leaseDurationSeconds = 40;
const leaseRenewMs = 10_000;
const statusHeartbeatMs = 60_000;

function conditions(now: Date, since: Date): V1NodeCondition[] {
  const row = (type: string, status: string, reason: string, message: string): V1NodeCondition => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: since,
  });
  return [
    row('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
    row('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    row('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    row('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status (captf local node)'),
  ];
}

/**
 * The API server's TaintNodesByCondition admission plugin taints every new Node
 * `node.kubernetes.io/not-ready:NoSchedule`; the node lifecycle controller lifts it once the node is
 * Ready. The local control plane does not run that controller, so the node lifts its own taint. A node
 * taken over from an earlier run gets (or loses) the dedicated taint here too.
 */
async function settleTaints(core: CoreV1Api, nodeName: string, dedicated: boolean): Promise<void> {
  for (let attempt = 1; attempt <= 5; attempt++) {
    const live = await core.readNode({ name: nodeName });
    const taints = live.spec?.taints ?? [];
    const others = taints.filter(
      (taint) => taint.key !== 'node.kubernetes.io/not-ready' && taint.key !== DEDICATED_TAINT_KEY,
    );
    const wanted = dedicated ? [...others, dedicatedTaint(nodeName)] : others;
    const same =
      wanted.length === taints.length &&
      wanted.every((taint) => taints.some((t) => t.key === taint.key && t.value === taint.value));
    if (same) return;
    try {
      await core.replaceNode({ name: nodeName, body: { ...live, spec: { ...live.spec, taints: wanted } } });
      return;
    } catch (error) {
      if (httpStatusOf(error) !== 409) throw error;
    }
  }
}

/**
 * Creates (or takes over) Node `nodeName` and starts its heartbeats. `kubeletVersion` is what the node
 * reports in `nodeInfo`; `kubeletPort` is where its kubelet API listens on the InternalIP (0: none), which
 * the API server dials for `pods/log`; a `dedicated` node carries {@link DEDICATED_TAINT_KEY}. Throws when the API server refuses the Node or its status.
 */
export async function registerNode(
  config: KubeConfig,
  nodeName: string,
  capacity: NodeCapacity,
  kubeletVersion: string,
  kubeletPort: number,
  dedicated: boolean,
  log: (line: string) => void,
): Promise<NodeRegistration> {
  const core = config.makeApiClient(CoreV1Api);
  const coordination = config.makeApiClient(CoordinationV1Api);
  const since = new Date();
  const body: V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: nodeName,
      labels: {
        'kubernetes.io/hostname': nodeName,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': arch() === 'x64' ? 'amd64' : arch(),
        [LOCAL_NODE_LABEL]: 'true',
      },
    },
    spec: dedicated ? { taints: [dedicatedTaint(nodeName)] } : {},
  };
  let node: V1Node;
  try {
    node = await core.createNode({ body });
  } catch (error) {
    if (httpStatusOf(error) !== 409) throw error;
    node = await core.readNode({ name: nodeName });
  }
  const allocatable = { ...capacity, 'ephemeral-storage': '20Gi' };
  const writeStatus = async (): Promise<void> => {
    const live = await core.readNode({ name: nodeName });
    const now = new Date();
    await core.replaceNodeStatus({
      name: nodeName,
      body: {
        ...live,
        status: {
          capacity: allocatable,
          allocatable,
          conditions: conditions(now, since),
          addresses: [
            { type: 'InternalIP', address: localNodeIp },
            { type: 'Hostname', address: nodeName },
          ],
          daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
          nodeInfo: {
            architecture: body.metadata?.labels?.['kubernetes.io/arch'] ?? 'amd64',
            bootID: randomUUID(),
            containerRuntimeVersion: 'captf-local://1',
            kernelVersion: release(),
            kubeProxyVersion: '',
            kubeletVersion,
            machineID: nodeName,
            operatingSystem: 'linux',
            osImage: 'captf local node (processes on the host)',
            systemUUID: node.metadata?.uid ?? nodeName,
          },
        },
      },
    });
  };
  // The Lease belongs to this Node object: deleting the Node lets the garbage collector take the Lease.
  const ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata?.uid ?? '' }];
  const renewLease = async (): Promise<void> => {
    const spec = {
      holderIdentity: nodeName,
      leaseDurationSeconds,
      renewTime: new V1MicroTime(),
    };
    try {
      const lease = await coordination.readNamespacedLease({ namespace: leaseNamespace, name: nodeName });
      await coordination.replaceNamespacedLease({
        namespace: leaseNamespace,
        name: nodeName,
        body: {
          ...lease,
          metadata: { ...lease.metadata, ownerReferences },
          spec: { ...lease.spec, ...spec },
        },
      });
    } catch (error) {
      if (httpStatusOf(error) !== 404) throw error;
      await coordination.createNamespacedLease({
        namespace: leaseNamespace,
        body: {
          metadata: { name: nodeName, namespace: leaseNamespace, ownerReferences },
          spec,
        },
      });
    }
  };
  await writeStatus();
  await settleTaints(core, nodeName, dedicated);
  await renewLease();
  log(`node ${nodeName} registered and Ready`);
  const beat = (what: string, action: () => Promise<void>) => async () => {
    await action().catch((cause: Error) => log(`node ${nodeName}: ${what} failed: ${cause.message}`));
  };
  const leaseTimer = setInterval(beat('lease renewal', renewLease), leaseRenewMs);
  const statusTimer = setInterval(beat('status heartbeat', writeStatus), statusHeartbeatMs);
  const stop = (): void => {
    clearInterval(leaseTimer);
    clearInterval(statusTimer);
  };
  return {
    stop,
    unregister: async () => {
      stop();
      try {
        await core.deleteNode({ name: nodeName });
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
      try {
        await coordination.deleteNamespacedLease({ namespace: leaseNamespace, name: nodeName });
      } catch (error) {
        if (httpStatusOf(error) !== 404) throw error;
      }
    },
  };
}
