import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { BUNDLE_NAMES, ensureBundlesBuilt } from '../../functions/bundle.ts';
import { startRedisCluster } from '../../src/local/redis-cluster.ts';
import { startRedisSentinel } from '../../src/local/redis-sentinel.ts';
import { ensureRunnerBuilt } from '../../src/local/runner-build.ts';
import { attachToStack, startLocalStack } from '../../src/local/stack.ts';
import { applyCrds } from './crds.ts';
import './index.ts';

const log = (line: string): void => console.log(`[test-env] ${line}`);

/**
 * Starts the real local stack (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, redis-server)
 * once per test run, plus a Redis Cluster and Sentinel on loopback (the Redis tests run on every topology),
 * builds the bundled runner and the entry-point bundles when stale, applies the generated CRDs, and provides it all to the tests
 * as `testStack`. `CAPTF_TEST_STACK=<stack.json>` reuses a stack started by `node src/local/cli.ts up`
 * instead (the Cluster and Sentinel are still this run's); `CAPTF_KEEP_STACK=1` keeps the temp dirs for logs.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Job pods on the local node run the bundled runner (dist/runner/runner), and the Lambda, image and
  // relay tests run the esbuild bundles (functions/bundle.ts); build what is stale once, before any test.
  await ensureRunnerBuilt(join(import.meta.dirname, '..', '..'), log);
  await ensureBundlesBuilt(BUNDLE_NAMES, log);
  const started = Date.now();
  const redisDir = mkdtempSync(join(tmpdir(), 'captf-test-redis-'));
  const cluster = await startRedisCluster({ workDir: redisDir, log });
  const sentinel = await startRedisSentinel({ workDir: redisDir, log }).catch(async (cause: unknown) => {
    await cluster.stop();
    throw cause;
  });
  const topologies = { redisCluster: cluster.topology, redisSentinel: sentinel.topology };
  const stopTopologies = async (): Promise<void> => {
    await Promise.all([cluster.stop(), sentinel.stop()]);
  };
  const removeDirs = (dirs: string[]) => (): void => {
    if (process.env.CAPTF_KEEP_STACK) return;
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };

  const reuse = process.env.CAPTF_TEST_STACK;
  if (reuse) {
    const info = await attachToStack(reuse);
    await applyCrds(info);
    project.provide('testStack', { ...info, ...topologies });
    const remove = removeDirs([redisDir]);
    process.once('exit', remove);
    return async () => {
      await stopTopologies();
      remove();
    };
  }
  const stack = await startLocalStack({ log }).catch(async (cause: unknown) => {
    await stopTopologies();
    throw cause;
  });
  await applyCrds(stack.info).catch(async (cause: unknown) => {
    await stack.stop();
    await stopTopologies();
    throw cause;
  });
  log(`stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${stack.info.workDir})`);
  project.provide('testStack', { ...stack.info, ...topologies });
  // An interrupted run skips the teardown: the stack's processes die with this one (setpriv), and the
  // work dirs go on exit.
  const remove = removeDirs([stack.info.workDir, redisDir]);
  process.once('exit', remove);
  return async () => {
    await stack.stop();
    await stopTopologies();
    remove();
  };
}
