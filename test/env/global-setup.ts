import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { BUNDLE_NAMES, ensureBundlesBuilt } from '../../functions/bundle.ts';
import { ensureRunnerBuilt } from '../../src/local/runner-build.ts';
import { attachToStack, startLocalStack } from '../../src/local/stack.ts';
import { applyCrds } from './crds.ts';
import './index.ts';

/**
 * Starts the real local stack (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, redis-server)
 * once per test run, builds the bundled runner and the entry-point bundles when stale, applies the generated
 * CRDs, and provides it to the tests as `testStack`. `CAPTF_TEST_STACK=<stack.json>` reuses a
 * stack started by `node src/local/cli.ts up` instead; `CAPTF_KEEP_STACK=1` keeps the temp dir for logs.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Job pods on the local node run the bundled runner (dist/runner/runner), and the Lambda, image and
  // relay tests run the esbuild bundles (functions/bundle.ts); build what is stale once, before any test.
  const log = (line: string) => console.log(`[test-env] ${line}`);
  await ensureRunnerBuilt(join(import.meta.dirname, '..', '..'), log);
  await ensureBundlesBuilt(BUNDLE_NAMES, log);
  const reuse = process.env.CAPTF_TEST_STACK;
  if (reuse) {
    const info = await attachToStack(reuse);
    await applyCrds(info);
    project.provide('testStack', { ...info });
    return async () => {};
  }
  const started = Date.now();
  const stack = await startLocalStack({ log: (line) => console.log(`[test-env] ${line}`) });
  await applyCrds(stack.info).catch(async (cause: unknown) => {
    await stack.stop();
    throw cause;
  });
  console.log(
    `[test-env] stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${stack.info.workDir})`,
  );
  project.provide('testStack', { ...stack.info });
  const removeWorkDir = (): void => {
    if (!process.env.CAPTF_KEEP_STACK) rmSync(stack.info.workDir, { recursive: true, force: true });
  };
  // An interrupted run skips the teardown: the stack's processes die with this one (setpriv), and the
  // work dir goes on exit.
  process.once('exit', removeWorkDir);
  return async () => {
    await stack.stop();
    removeWorkDir();
  };
}
