import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type V1Pod, Watch } from '@kubernetes/client-node';
import { locateBinaries, pauseBinaryPath } from '../binaries.ts';
import { KUBELET_CLIENT_CN } from '../control-plane.ts';
import { canSetHostname } from './container-process.ts';
import { localImageTarget, parseImageReference } from './image-reference.ts';
import { pullLocalImage } from './image-store.ts';
import { type KubeletServer, startKubeletServer } from './kubelet-server.ts';
import { nodeApi } from './node-api.ts';
import { type NodeCapacity, registerNode } from './node-registration.ts';
import { isTerminalPhase, lostRuntime, podStatus } from './pod-status.ts';
import { containerLogPath, type PodWorker, type PodWorkerContext, startPodWorker } from './pod-worker.ts';
import { kubeletPullBackoff, type PullBackoffConfig } from './pull-backoff.ts';

/**
 * The local node (development and end-to-end tests only, never shipped): registers a Node with the API
 * server and acts as its kubelet for the pods the real kube-scheduler binds to it. Pods are watched with
 * `spec.nodeName=<node>` (re-listed whenever a watch ends); each pod is run once by a pod worker.
 *
 * Restart rule: a pod that is not terminal but already shows a started container when the node first sees
 * it was run by an earlier node process, whose processes are gone. The node reports it like a kubelet that
 * lost its containers: those containers `terminated{137, ContainerStatusUnknown}`, the pod Failed (the
 * Job controller then fails the Job, or the controller counts an interruption). A pod that never started a
 * container is simply run.
 */

/** Options of {@link startLocalNode}. */
export interface LocalNodeOptions {
  /** Kubeconfig file of the API server (or `kubeConfig`, already loaded). */
  kubeconfigPath?: string;
  kubeConfig?: KubeConfig;
  /** Node name; default `captf-local-node`. */
  nodeName?: string;
  /**
   * Taint the node `captf.io/dedicated=<node>:NoSchedule` (node-registration.ts), so only pods that
   * tolerate it are scheduled here. On a test API server shared by many files, Pending pods of tests that
   * need no node would otherwise all be bound to the first node that registers and load it. Default false.
   */
  dedicated?: boolean;
  /** Directories holding `<name>/` image roots, searched in order (infra/local/images/README.md). */
  imageDirs: string[];
  /** Registry host that maps to the image dirs; default `captf.local`. */
  registry?: string;
  /**
   * Host tools images may link to, by name; merged over the defaults `runner` (dist/runner/runner),
   * `tofu` (the pinned OpenTofu in `~/.cache/captf/bin`) and `pause` (the static pause program), each when built.
   */
  tools?: Record<string, string>;
  /** Where pod work directories live; default a fresh temp directory, removed on stop. */
  stateDir?: string;
  /**
   * Serve the kubelet API (`kubectl logs`) with this certificate and key, to clients the CA signed (the
   * control plane's `kubeletTls`). Without it the node reports no kubelet port and logs stay on disk.
   */
  kubeletTls?: { certPath: string; keyPath: string; clientCaPath: string };
  /** Default cpu 2, memory 8Gi, pods 110. */
  capacity?: NodeCapacity;
  /** Image pull back-off timings; default the kubelet's (10 s doubling to 300 s). */
  pullBackoff?: PullBackoffConfig;
  /** Give containers the pod's hostname through a UTS namespace; default: when `unshare` works. */
  podHostname?: boolean;
  /** Delete the Node object on stop (tests; a real kubelet leaves it). Default false. */
  unregisterOnStop?: boolean;
  /** Keep pod work directories after their pods are deleted (debugging). Default false. */
  keepPodDirs?: boolean;
  log?: (line: string) => void;
}

/** A running local node. */
export interface LocalNode {
  nodeName: string;
  stateDir: string;
  /**
   * Stops watching and heartbeats and kills every container process without reporting (as a node that
   * goes away does); deletes the Node when `unregister` (default: the `unregisterOnStop` option).
   */
  stop(options?: { unregister?: boolean }): Promise<void>;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Kubelet version the node reports: the pinned Kubernetes version, marked as this local node. */
const kubeletVersionOf = (): string => {
  try {
    return `v${locateBinaries().versions.kubernetes}-captf-local`;
  } catch {
    return 'v0.0.0-captf-local';
  }
};

/**
 * The host tools images link to: `runner`, the runner's single executable (`npm run build:runner` writes
 * dist/runner/runner; `runner copy` works only from it), and `tofu`, the pinned OpenTofu. A tool that is
 * `pause`, the static pause program (infra/local/pause/pause.go; the sample machine module's `sleep`). A tool that is
 * not built is left out: an image linking it then fails to pull with a message naming the tool.
 */
function defaultTools(log: (line: string) => void): Record<string, string> {
  const tools: Record<string, string> = {};
  const runner = join(repoRoot, 'dist', 'runner', 'runner');
  if (existsSync(runner)) tools.runner = runner;
  else log(`no runner executable at ${runner}: build it with \`npm run build:runner\``);
  try {
    tools.tofu = locateBinaries().tofu;
  } catch (cause) {
    log(`no tofu tool: ${(cause as Error).message}`);
  }
  const pause = pauseBinaryPath();
  if (existsSync(pause)) tools.pause = pause;
  else log(`no pause program at ${pause}: build it with \`bash scripts/build-binaries.sh node\``);
  return tools;
}

/** Variables of the `kubernetes` service, pointing at the real API server (containers share the host network). */
function serviceEnv(config: KubeConfig): [string, string][] {
  const server = new URL(config.getCurrentCluster()?.server ?? 'https://127.0.0.1:443');
  const host = server.hostname;
  const port = server.port || '443';
  return [
    ['KUBERNETES_SERVICE_HOST', host],
    ['KUBERNETES_SERVICE_PORT', port],
    ['KUBERNETES_SERVICE_PORT_HTTPS', port],
    ['KUBERNETES_PORT', `tcp://${host}:${port}`],
    ['KUBERNETES_PORT_443_TCP', `tcp://${host}:${port}`],
    ['KUBERNETES_PORT_443_TCP_PROTO', 'tcp'],
    ['KUBERNETES_PORT_443_TCP_PORT', port],
    ['KUBERNETES_PORT_443_TCP_ADDR', host],
  ];
}

interface PodRecord {
  /** The newest version of the pod the node has seen. */
  pod: V1Pod;
  worker?: PodWorker;
  finished: boolean;
  deleteRequested: boolean;
}

/**
 * Registers the node and starts serving its pods. Throws when the API server refuses the Node.
 * The returned `stop()` must be called (tests: in `afterAll`, with `unregisterOnStop`).
 */
export async function startLocalNode(options: LocalNodeOptions): Promise<LocalNode> {
  const log = options.log ?? ((line: string) => console.log(`[local-node] ${line}`));
  const config = options.kubeConfig ?? new KubeConfig();
  if (!options.kubeConfig) {
    if (!options.kubeconfigPath)
      throw new Error('start local node: kubeconfigPath or kubeConfig is required');
    config.loadFromFile(options.kubeconfigPath);
  }
  const nodeName = options.nodeName ?? 'captf-local-node';
  const registry = options.registry ?? 'captf.local';
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'captf-node-'));
  const podsDir = join(stateDir, 'pods');
  mkdirSync(podsDir, { recursive: true });
  const tools = { ...defaultTools(log), ...options.tools };
  const imageDirs = options.imageDirs.map((dir) => resolve(dir));
  const api = nodeApi(config, nodeName);
  const setHostname = options.podHostname ?? canSetHostname();
  const baseEnv = new Map<string, string>([
    ['PATH', `${dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`],
    ...serviceEnv(config),
  ]);
  const ctx: PodWorkerContext = {
    api,
    pull: (image) => {
      const parsed = parseImageReference(image);
      if (parsed.kind === 'invalid') return parsed;
      const target = localImageTarget(parsed.reference, registry);
      if (target.kind === 'foreign')
        return { kind: 'failed', message: `failed to resolve reference "${image}": ${image}: not found` };
      try {
        return pullLocalImage(target.name, target.digest, imageDirs, tools);
      } catch (cause) {
        return { kind: 'failed', message: `read image ${target.name}: ${(cause as Error).message}` };
      }
    },
    imageId: (image) => `${registry}/${image.name}@${image.digest}`,
    podsDir,
    pullBackoff: options.pullBackoff ?? kubeletPullBackoff,
    setHostname,
    baseEnv,
    retryMs: 2000,
    now: () => new Date(),
    log,
  };

  const records = new Map<string, PodRecord>();
  const tls = options.kubeletTls;
  const kubelet: KubeletServer | undefined = tls
    ? await startKubeletServer({
        tls: {
          cert: readFileSync(tls.certPath, 'utf8'),
          key: readFileSync(tls.keyPath, 'utf8'),
          clientCa: readFileSync(tls.clientCaPath, 'utf8'),
        },
        clientCommonName: KUBELET_CLIENT_CN,
        findPod: (namespace, name) => {
          const record = [...records.values()].find(
            (entry) => entry.pod.metadata?.namespace === namespace && entry.pod.metadata?.name === name,
          );
          if (!record) return undefined;
          const uid = record.pod.metadata?.uid ?? '';
          return {
            pod: record.pod,
            status: record.worker?.status() ?? record.pod.status,
            logPath: (container) => containerLogPath(podsDir, uid, container),
          };
        },
        log,
      })
    : undefined;
  const registration = await registerNode(
    config,
    nodeName,
    options.capacity ?? { cpu: '2', memory: '8Gi', pods: '110' },
    kubeletVersionOf(),
    kubelet?.port ?? 0,
    options.dedicated ?? false,
    log,
  ).catch(async (cause: unknown) => {
    await kubelet?.close();
    throw cause;
  });
  log(`node ${nodeName}: images from ${imageDirs.join(', ')} as ${registry}/<name>; pod dirs in ${podsDir}`);
  if (!setHostname) log(`node ${nodeName}: no UTS namespaces here; containers see the host's hostname`);
  log(
    kubelet
      ? `node ${nodeName}: kubelet API (kubectl logs) on https://127.0.0.1:${kubelet.port}`
      : `node ${nodeName}: no kubelet TLS given; kubectl logs will not reach this node`,
  );

  const deleteOnce = (record: PodRecord, pod: V1Pod): void => {
    if (record.deleteRequested || !pod.metadata?.deletionTimestamp) return;
    record.deleteRequested = true;
    void api
      .deletePod(pod)
      .catch((cause: Error) => log(`delete pod ${pod.metadata?.name}: ${cause.message}`));
  };

  let stopped = false;
  const handle = (pod: V1Pod): void => {
    const uid = pod.metadata?.uid;
    // A stopping node starts nothing new (a late watch event must not outlive stop()).
    if (!uid || stopped) return;
    const known = records.get(uid);
    if (known) {
      known.pod = pod;
      known.worker?.update(pod);
      if (known.finished) deleteOnce(known, pod);
      return;
    }
    const record: PodRecord = { pod, finished: false, deleteRequested: false };
    records.set(uid, record);
    if (isTerminalPhase(pod.status?.phase)) {
      record.finished = true;
      deleteOnce(record, pod);
      return;
    }
    const lost = lostRuntime(pod, new Date());
    if (lost) {
      log(
        `pod ${pod.metadata?.namespace}/${pod.metadata?.name}: started by an earlier node process; reporting its containers lost`,
      );
      void api
        .writeStatus(pod, (live) => podStatus(live, lost, new Date()))
        .catch((cause: Error) => log(`pod ${pod.metadata?.name}: status write failed: ${cause.message}`))
        .then(() => {
          record.finished = true;
          deleteOnce(record, pod);
        });
      return;
    }
    record.worker = startPodWorker(pod, ctx);
    record.worker.update(pod);
    void record.worker.done.then(() => {
      record.finished = true;
    });
  };

  const gone = (pod: V1Pod): void => {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const record = records.get(uid);
    records.delete(uid);
    record?.worker?.abandon();
    if (!options.keepPodDirs)
      void (record?.worker?.done ?? Promise.resolve()).then(() =>
        rmSync(join(podsDir, uid), { recursive: true, force: true }),
      );
  };

  let currentWatch: AbortController | undefined;
  const core = config.makeApiClient(CoreV1Api);
  const watcher = new Watch(config);
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const serve = async (): Promise<void> => {
    while (!stopped) {
      try {
        const list = await core.listPodForAllNamespaces({ fieldSelector });
        const present = new Set(list.items.map((pod) => pod.metadata?.uid));
        for (const pod of list.items) handle(pod);
        for (const uid of [...records.keys()]) if (!present.has(uid)) gone({ metadata: { uid } });
        await new Promise<void>((resolveWatch) => {
          watcher
            .watch(
              '/api/v1/pods',
              { fieldSelector, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
              (type: string, object: V1Pod) => {
                if (type === 'ADDED' || type === 'MODIFIED') handle(object);
                else if (type === 'DELETED') gone(object);
                // ERROR (e.g. 410 Gone: the resourceVersion is too old): end this watch and re-list.
                else if (type === 'ERROR') currentWatch?.abort();
              },
              () => resolveWatch(),
            )
            .then((controller) => {
              currentWatch = controller;
              if (stopped) controller.abort();
            })
            .catch(() => resolveWatch());
        });
        // A watch that ends at once (API server restarting) must not turn into a busy loop of re-lists.
        if (!stopped) await sleep(200);
      } catch (cause) {
        if (!stopped) log(`node ${nodeName}: list pods failed: ${(cause as Error).message}`);
        await sleep(1000);
      }
    }
  };
  const serving = serve();

  return {
    nodeName,
    stateDir,
    stop: async (stopOptions = {}) => {
      stopped = true;
      currentWatch?.abort();
      registration.stop();
      await kubelet?.close();
      await Promise.all([...records.values()].map((record) => record.worker?.shutdown()));
      await serving;
      if (stopOptions.unregister ?? options.unregisterOnStop) await registration.unregister();
      // A state directory the node made for itself goes with it; a given one belongs to the caller.
      if (options.stateDir === undefined && !options.keepPodDirs)
        rmSync(stateDir, { recursive: true, force: true });
      log(`node ${nodeName} stopped`);
    },
  };
}
