import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pauseBinaryPath, readVersions } from '../binaries.ts';
import { freePort } from '../ports.ts';
import type { ManagedProcess } from '../process.ts';
import { waitUntilHealthy } from '../process.ts';
import type { StackInfo } from '../stack.ts';
import { type Containerd, startContainerd } from './containerd.ts';
import {
  absentKubeletHostPaths,
  cgroupDirs,
  type HostNames,
  hostAddress,
  hostNames,
  missingForRealNode,
  removeCgroupTree,
  removeKubeletHostPaths,
  tryRun,
  unmountUnder,
} from './host.ts';
import { type LocalRegistry, PAUSE_IMAGE, pushLocalImages, startRegistry } from './images.ts';
import { startKubelet } from './kubelet.ts';
import { addServiceRoute } from './service-route.ts';

/**
 * A real node for the local stack: the kubelet of the control plane's Kubernetes release, containerd and
 * runc (Debian's), a CNI bridge, and crane's registry serving the project's images as `captf.local/*`.
 * Everything lives under the node's directory except what the kernel keeps by name (bridge, nftables
 * table, cgroup), and those names derive from the directory (host.ts), so two stacks never share them.
 */

const repoRoot = join(import.meta.dirname, '..', '..', '..');

/** The service IP of the `kubernetes` Service (the control plane's first service address). */
const KUBERNETES_SERVICE_IP = '10.0.0.1';

/** The Go-built files a real node needs (scripts/build-binaries.sh node). */
export function realNodeBinaries(
  binDir: string,
  cacheBin = join(binDir, '..'),
): {
  kubelet: string;
  crane: string;
  pause: string;
} {
  const versions = readVersions();
  return {
    kubelet: join(binDir, 'kubelet'),
    crane: join(cacheBin, `crane-v${versions.CRANE_VERSION}`, 'crane'),
    pause: pauseBinaryPath(cacheBin),
  };
}

export interface RealNodeOptions {
  stack: StackInfo;
  /** The node's directory (containerd's root and state, the kubelet's root, pod logs); created. */
  dir: string;
  logDir: string;
  nodeName: string;
  /** Directories of local images to push besides infra/local/images (the tests' fixtures). */
  imageDirs?: readonly string[];
  /** Taints registered with the Node (a test's dedicated node). */
  taints?: readonly { key: string; value: string; effect: string }[];
  log?: (line: string) => void;
}

/** A running real node. */
export interface RealNode {
  nodeName: string;
  names: HostNames;
  /** `127.0.0.1:<port>` of the registry behind `captf.local`. */
  registry: string;
  /** Manifest digest of each pushed image, by name. */
  digests: Record<string, string>;
  /** containerd's socket (for `ctr --address`). */
  containerdAddress: string;
  /** Stops kubelet, pods, containerd and registry by PID, removes what they left on the host, deletes the Node. */
  stop(): Promise<void>;
}

/**
 * Starts a real node and waits until its Node is Ready. Throws, naming everything the machine lacks,
 * before starting anything when it cannot run one (no root, no overlayfs, a missing tool or binary).
 */
export async function startRealNode(options: RealNodeOptions): Promise<RealNode> {
  const log = options.log ?? (() => undefined);
  const { stack, dir } = options;
  const binaries = realNodeBinaries(stack.binDir);
  const missing = missingForRealNode(binaries);
  if (missing.length > 0)
    throw new Error(`this machine cannot run a real node; missing:\n  ${missing.join('\n  ')}`);
  mkdirSync(dir, { recursive: true });
  const names = hostNames(dir);
  const nodeIp = hostAddress();
  const apiPort = Number(new URL(stack.apiServerUrl).port);
  let registry: LocalRegistry | undefined;
  let containerd: Containerd | undefined;
  let kubelet: ManagedProcess | undefined;
  const kubectl = (...args: string[]): string =>
    execFileSync(stack.kubectlPath, ['--kubeconfig', stack.kubeconfigPath, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  // Read before the kubelet can create them (its device plugin socket, outside its own directory).
  const kubeletHostPaths = absentKubeletHostPaths();
  const stop = async (): Promise<void> => {
    await kubelet?.stop();
    await containerd?.stop();
    await registry?.process.stop();
    // Every removal is tried; what could not be removed is reported together, never dropped.
    const leftovers: string[] = removeKubeletHostPaths(kubeletHostPaths);
    unmountUnder(dir);
    if (existsSync(`/sys/class/net/${names.bridge}`) && !tryRun('ip', ['link', 'delete', names.bridge]))
      leftovers.push(`bridge ${names.bridge}`);
    if (
      tryRun('nft', ['list', 'table', 'ip', names.nftTable]) &&
      !tryRun('nft', ['delete', 'table', 'ip', names.nftTable])
    )
      leftovers.push(`nftables table ip ${names.nftTable}`);
    for (const cgroup of cgroupDirs(names.cgroup)) {
      try {
        removeCgroupTree(cgroup);
      } catch (cause) {
        leftovers.push(`cgroup ${cgroup} (${(cause as NodeJS.ErrnoException).code})`);
      }
    }
    tryRun(stack.kubectlPath, [
      '--kubeconfig',
      stack.kubeconfigPath,
      'delete',
      'node',
      options.nodeName,
      '--ignore-not-found',
      '--wait=false',
    ]);
    if (leftovers.length > 0)
      throw new Error(`stop the real node ${options.nodeName}: could not remove ${leftovers.join(', ')}`);
  };
  try {
    for (const cgroup of cgroupDirs(names.cgroup)) makeCgroup(cgroup);
    addServiceRoute(names, KUBERNETES_SERVICE_IP, apiPort, join(dir, 'service-route.nft'));
    log(`starting the image registry (crane) and pushing the images`);
    registry = await startRegistry(binaries.crane, options.logDir);
    const digests = await pushLocalImages({
      crane: binaries.crane,
      registry: registry.address,
      pause: binaries.pause,
      repoRoot,
      imageDirs: [join(repoRoot, 'infra', 'local', 'images'), ...(options.imageDirs ?? [])],
      tools: {
        tofu: stack.tofuPath,
        runner: join(repoRoot, 'dist', 'runner', 'runner'),
        pause: binaries.pause,
      },
      workDir: join(dir, 'images'),
    });
    log(`starting containerd (bridge ${names.bridge}, pods ${names.subnet})`);
    containerd = await startContainerd({
      dir: join(dir, 'containerd'),
      logDir: options.logDir,
      names,
      pauseImage: PAUSE_IMAGE,
      registry: registry.address,
    });
    log(`starting the kubelet v${stack.versions.kubernetes} as node ${options.nodeName} (${nodeIp})`);
    const healthzPort = await freePort();
    kubelet = startKubelet({
      kubelet: binaries.kubelet,
      dir: join(dir, 'kubelet'),
      logDir: options.logDir,
      names,
      nodeName: options.nodeName,
      nodeIp,
      port: await freePort(),
      healthzPort,
      kubeconfigPath: stack.kubeconfigPath,
      kubeletCa: { certPath: stack.kubeletTls.caPath, keyPath: stack.kubeletTls.caKeyPath },
      runtimeEndpoint: containerd.endpoint,
      ...(options.taints ? { taints: options.taints } : {}),
    });
    await waitUntilHealthy(
      kubelet,
      'Ready',
      async () =>
        kubectl(
          'get',
          'node',
          options.nodeName,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ) === 'True',
      120_000,
      500,
    );
    // The API server's TaintNodesByCondition admission taints a new Node not-ready; the node lifecycle
    // controller lifts it once Ready, and the local control plane does not run that controller.
    kubectl('taint', 'node', options.nodeName, 'node.kubernetes.io/not-ready:NoSchedule-');
    return {
      nodeName: options.nodeName,
      names,
      registry: registry.address,
      digests,
      containerdAddress: containerd.address,
      stop,
    };
  } catch (cause) {
    await stop();
    throw cause;
  }
}

/**
 * Creates a cgroup of the node's; a v1 cpuset cgroup starts with no CPUs and no memory nodes, so it takes
 * its parent's (runc would otherwise fail to join it).
 */
function makeCgroup(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const file of ['cpuset.cpus', 'cpuset.mems']) {
    const own = join(dir, file);
    if (existsSync(own) && readFileSync(own, 'utf8').trim() === '')
      writeFileSync(own, readFileSync(join(dir, '..', file)));
  }
}
