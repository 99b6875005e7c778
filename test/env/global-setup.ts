import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { BUNDLE_NAMES, ensureBundlesBuilt } from '../../functions/bundle.ts';
import { type CapiManager, startCapiManager } from '../../src/local/capi-manager.ts';
import { kubectlFor } from '../../src/local/kubectl.ts';
import { startRedisCluster } from '../../src/local/redis-cluster.ts';
import { startRedisSentinel } from '../../src/local/redis-sentinel.ts';
import { ensureRunnerBuilt } from '../../src/local/runner-build.ts';
import { attachToStack, type StackInfo, startLocalStack } from '../../src/local/stack.ts';
import { applyCrds } from './crds.ts';
import './index.ts';

const log = (line: string): void => console.log(`[test-env] ${line}`);

/**
 * Applies our CRDs and starts Cluster API's core manager (its certificates under `dir`, its log in `logDir`)
 * side by side: they do not depend on each other. Whatever started is stopped when the other fails.
 */
async function installOnStack(info: StackInfo, dir: string, logDir: string): Promise<CapiManager> {
  const [crds, capi] = await Promise.allSettled([
    applyCrds(info),
    startCapiManager({
      kubeconfigPath: info.kubeconfigPath,
      files: info.capiFiles,
      version: info.versions.clusterApi,
      kubectl: kubectlFor(info.kubectlPath, info.kubeconfigPath),
      dir,
      logDir,
      log,
    }),
  ]);
  if (crds.status === 'rejected') {
    if (capi.status === 'fulfilled') await capi.value.stop();
    throw crds.reason;
  }
  if (capi.status === 'rejected') throw capi.reason;
  return capi.value;
}

/**
 * Starts the real local stack (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, redis-server)
 * once per test run, plus a Redis Cluster and Sentinel on loopback (the Redis tests run on every topology),
 * builds the bundled runner and the entry-point bundles when stale, applies the generated CRDs, starts Cluster
 * API's core manager (one for the run, shared by every file), and provides it all to the tests as
 * `testStack`. `CAPTF_TEST_STACK=<stack.json>` reuses a stack started by `node src/local/cli.ts up` instead
 * (the Cluster and Sentinel are still this run's, and so is the Cluster API manager unless that stack runs one); `CAPTF_KEEP_STACK=1` keeps the temp
 * dirs for logs.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Job pods on the local node run the bundled runner (dist/runner/runner), and the Lambda, image and
  // relay tests run the esbuild bundles (functions/bundle.ts); build what is stale once, before any test.
  await ensureRunnerBuilt(join(import.meta.dirname, '..', '..'), log);
  await ensureBundlesBuilt(BUNDLE_NAMES, log);
  const started = Date.now();
  // This run's temp dirs go in the teardown, or on exit when the setup fails or the run is interrupted.
  const dirs: string[] = [];
  const removeDirs = (): void => {
    if (process.env.CAPTF_KEEP_STACK) return;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', removeDirs);
  const tempDir = (prefix: string): string => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  const redisDir = tempDir('captf-test-redis-');
  const cluster = await startRedisCluster({ workDir: redisDir, log });
  const sentinel = await startRedisSentinel({ workDir: redisDir, log }).catch(async (cause: unknown) => {
    await cluster.stop();
    throw cause;
  });
  const topologies = { redisCluster: cluster.topology, redisSentinel: sentinel.topology };
  const stopTopologies = async (): Promise<void> => {
    await Promise.all([cluster.stop(), sentinel.stop()]);
  };

  const reuse = process.env.CAPTF_TEST_STACK;
  if (reuse) {
    const info = await attachToStack(reuse).catch(async (cause: unknown) => {
      await stopTopologies();
      throw cause;
    });
    // `npm start` runs a manager on its stack (stack.json says where): a second one would reconcile the same
    // objects and re-point the webhooks at itself.
    const capiDir = info.capi ? undefined : tempDir('captf-test-capi-');
    let capi: CapiManager | undefined;
    try {
      if (capiDir) capi = await installOnStack(info, capiDir, capiDir);
      else await applyCrds(info);
    } catch (cause) {
      await stopTopologies();
      throw cause;
    }
    const capiInfo = info.capi ?? capi?.info;
    if (!capiInfo) throw new Error('test stack: no Cluster API manager (neither the stack nor this run)');
    project.provide('testStack', { ...info, ...topologies, capi: capiInfo });
    return async () => {
      await capi?.stop();
      await stopTopologies();
      removeDirs();
    };
  }
  const workDir = tempDir('captf-stack-');
  const stack = await startLocalStack({ log, workDir }).catch(async (cause: unknown) => {
    await stopTopologies();
    throw cause;
  });
  const capi = await installOnStack(
    stack.info,
    join(stack.info.workDir, 'capi'),
    join(stack.info.workDir, 'logs'),
  ).catch(async (cause: unknown) => {
    await stack.stop();
    await stopTopologies();
    throw cause;
  });
  log(`stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${stack.info.workDir})`);
  project.provide('testStack', { ...stack.info, ...topologies, capi: capi.info });
  // An interrupted run skips the teardown: the stack's processes die with this one (setpriv), and the
  // work dirs go on exit.
  return async () => {
    await capi.stop();
    await stack.stop();
    await stopTopologies();
    removeDirs();
  };
}
