import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BinaryPaths, locateBinaries } from './binaries.ts';
import { type ControlPlane, httpsGet, startControlPlane } from './control-plane.ts';
import { type LocalRedis, startRedis } from './redis-server.ts';

/** What a running local stack tells its users; also written as JSON to `<workDir>/stack.json`. */
export interface StackInfo {
  kubeconfigPath: string;
  apiServerUrl: string;
  adminToken: string;
  caPath: string;
  redisUrl: string;
  tofuPath: string;
  /** kubectl of the same Kubernetes release (for kustomize, explain and manual checks). */
  kubectlPath: string;
  binDir: string;
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

/**
 * Starts the local default of DESIGN.md section 15 (control plane and Redis) in a fresh temp directory
 * (or `workDir`). Throws when a binary is missing or a component does not become healthy.
 */
export async function startLocalStack(
  options: { workDir?: string; log?: (line: string) => void } = {},
): Promise<LocalStack> {
  const binaries = locateBinaries();
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'captf-stack-'));
  const controlPlane = await startControlPlane({
    binaries,
    workDir,
    ...(options.log ? { log: options.log } : {}),
  });
  let redis: LocalRedis;
  try {
    options.log?.('starting redis-server');
    redis = await startRedis({ workDir });
  } catch (cause) {
    await controlPlane.stop();
    throw cause;
  }
  const info: StackInfo = {
    kubeconfigPath: controlPlane.kubeconfigPath,
    apiServerUrl: controlPlane.apiServerUrl,
    adminToken: controlPlane.adminToken,
    caPath: controlPlane.caPath,
    redisUrl: redis.url,
    tofuPath: binaries.tofu,
    kubectlPath: binaries.kubectl,
    binDir: join(binaries.kubeApiserver, '..'),
    workDir,
    versions: binaries.versions,
  };
  writeFileSync(join(workDir, 'stack.json'), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  return {
    info,
    controlPlane,
    redis,
    stop: async () => {
      await redis.stop();
      await controlPlane.stop();
    },
  };
}

/**
 * Reads a `stack.json` written by a running stack and checks the API server still answers.
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
  return info;
}
