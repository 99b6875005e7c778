import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RedisTopology } from '../adapters/redis/topology.ts';
import { type BinaryPaths, type CapiFiles, locateBinaries } from './binaries.ts';
import type { CapiManagerInfo } from './capi-manager.ts';
import { type ControlPlane, httpsGet, type KubeletTls, startControlPlane } from './control-plane.ts';
import { startRedisCluster } from './redis-cluster.ts';
import { startRedisSentinel } from './redis-sentinel.ts';
import { type LocalRedis, startRedis } from './redis-server.ts';

/** What a running local stack tells its users; also written as JSON to `<workDir>/stack.json`. */
export interface StackInfo {
  kubeconfigPath: string;
  apiServerUrl: string;
  adminToken: string;
  caPath: string;
  /** What a local node serves its kubelet API with (`kubectl logs`): certificate, key, client CA. */
  kubeletTls: KubeletTls;
  /** The single redis-server, `redis://127.0.0.1:<port>`; always started. */
  redisUrl: string;
  /** The Redis the controller uses: the single node, or the Cluster or Sentinel setup asked for. */
  redis: RedisTopology;
  tofuPath: string;
  /** kubectl of the same Kubernetes release (for kustomize, explain and manual checks). */
  kubectlPath: string;
  binDir: string;
  /** Knative Eventing's source adapters and the PingSource CRD (`--events=knative`). */
  knative: Pick<BinaryPaths, 'apiServerReceiveAdapter' | 'mtping' | 'pingSourceCrd'>;
  /** Cluster API's core manager, CRDs and webhooks (src/local/capi-manager.ts starts it). */
  capiFiles: CapiFiles;
  /** The Cluster API manager running on this stack, once its owner started one (`npm start` does). */
  capi?: CapiManagerInfo;
  workDir: string;
  versions: BinaryPaths['versions'];
}

/** A local control plane plus Redis, started together and stopped together. */
export interface LocalStack {
  info: StackInfo;
  controlPlane: ControlPlane;
  redis: LocalRedis;
  stop(): Promise<void>;
}

/** The Redis topologies the local stack can run for the controller (`npm start -- --redis=<topology>`). */
export const LOCAL_REDIS_TOPOLOGIES = ['single', 'cluster', 'sentinel'] as const;
export type LocalRedisTopology = (typeof LOCAL_REDIS_TOPOLOGIES)[number];

/**
 * Starts the local default of DESIGN.md section 15 (control plane and Redis) in a fresh temp directory
 * (or `workDir`). Throws when a binary is missing or a component does not become healthy. A temp directory
 * it made is removed by `stop` and by a failed start (it holds etcd's data, every pod's files and the local
 * credentials), unless `CAPTF_KEEP_STACK` is set; a given `workDir` is the caller's.
 */
export async function startLocalStack(
  options: { workDir?: string; log?: (line: string) => void; redis?: LocalRedisTopology } = {},
): Promise<LocalStack> {
  const binaries = locateBinaries();
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'captf-stack-'));
  const removeOwnDir = () => {
    if (options.workDir === undefined && !process.env.CAPTF_KEEP_STACK)
      rmSync(workDir, { recursive: true, force: true });
  };
  let controlPlane: ControlPlane;
  try {
    controlPlane = await startControlPlane({
      binaries,
      workDir,
      ...(options.log ? { log: options.log } : {}),
    });
  } catch (cause) {
    removeOwnDir();
    throw cause;
  }
  let redis: LocalRedis;
  let topology: { topology: RedisTopology; stop(): Promise<void> } | undefined;
  try {
    options.log?.('starting redis-server');
    redis = await startRedis({ workDir });
  } catch (cause) {
    await controlPlane.stop();
    removeOwnDir();
    throw cause;
  }
  try {
    if (options.redis === 'cluster') topology = await startRedisCluster({ workDir, ...logOf(options) });
    if (options.redis === 'sentinel') topology = await startRedisSentinel({ workDir, ...logOf(options) });
  } catch (cause) {
    await redis.stop();
    await controlPlane.stop();
    removeOwnDir();
    throw cause;
  }
  const info: StackInfo = {
    kubeconfigPath: controlPlane.kubeconfigPath,
    apiServerUrl: controlPlane.apiServerUrl,
    adminToken: controlPlane.adminToken,
    caPath: controlPlane.caPath,
    kubeletTls: controlPlane.kubeletTls,
    redisUrl: redis.url,
    redis: topology?.topology ?? { kind: 'single', url: redis.url },
    tofuPath: binaries.tofu,
    kubectlPath: binaries.kubectl,
    binDir: join(binaries.kubeApiserver, '..'),
    knative: {
      apiServerReceiveAdapter: binaries.apiServerReceiveAdapter,
      mtping: binaries.mtping,
      pingSourceCrd: binaries.pingSourceCrd,
    },
    capiFiles: binaries.capi,
    workDir,
    versions: binaries.versions,
  };
  writeStackInfo(info);
  return {
    info,
    controlPlane,
    redis,
    stop: async () => {
      await topology?.stop();
      await redis.stop();
      await controlPlane.stop();
      removeOwnDir();
    },
  };
}

/** Writes `<workDir>/stack.json` (read by {@link attachToStack}); again whenever the stack gains a part. */
export function writeStackInfo(info: StackInfo): void {
  writeFileSync(join(info.workDir, 'stack.json'), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
}

function logOf(options: { log?: (line: string) => void }): { log?: (line: string) => void } {
  return options.log ? { log: options.log } : {};
}

/**
 * Reads a `stack.json` written by a running stack and checks the API server (and the Cluster API manager,
 * when the stack runs one) still answers.
 * Throws an Error saying what is wrong (no file, API server down) so a stale reuse fails loudly.
 */
export async function attachToStack(stackJsonPath: string): Promise<StackInfo> {
  const info = JSON.parse(readFileSync(stackJsonPath, 'utf8')) as StackInfo;
  const ca = readFileSync(info.caPath, 'utf8');
  const res = await httpsGet(info.apiServerUrl, '/readyz', { ca, token: info.adminToken }).catch(
    (cause: Error) => ({
      status: 0,
      body: cause.message,
    }),
  );
  if (res.status !== 200)
    throw new Error(`attach to stack ${stackJsonPath}: API server not ready (${res.status} ${res.body})`);
  if (info.capi) {
    const capi = await fetch(`${info.capi.healthUrl}/readyz`).catch((cause: Error) => cause);
    if (!(capi instanceof Response) || capi.status !== 200)
      throw new Error(
        `attach to stack ${stackJsonPath}: Cluster API manager not ready (${capi instanceof Response ? capi.status : capi.message}); log ${info.capi.logPath}`,
      );
  }
  return info;
}
