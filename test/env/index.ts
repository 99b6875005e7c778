import { inject } from 'vitest';

/**
 * The one entry point tests use to reach the real local stack started by test/env/global-setup.ts
 * (STYLE.md habit 9). Throws when the stack is not there: a missing component fails loudly, never skips.
 */
export interface TestStack {
  /** Path of a kubeconfig with cluster-admin rights on the local kube-apiserver. */
  kubeconfigPath: string;
  /** `redis://127.0.0.1:<port>` of the test redis-server (no persistence). */
  redisUrl: string;
  /** Absolute path of the tofu binary built from the Go module proxy. */
  tofuPath: string;
  /** kubectl built from the same Kubernetes release (kustomize, explain); never the machine's own. */
  kubectlPath: string;
  /** Directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler. */
  binDir: string;
  /** The API server's URL, e.g. `https://127.0.0.1:<port>`. */
  apiServerUrl: string;
  /** Bearer token of the admin user (system:masters). */
  adminToken: string;
  /** PEM file of the API server's serving certificate. */
  caPath: string;
  /** The stack's temp directory (logs under `logs/`). */
  workDir: string;
  versions: { kubernetes: string; etcd: string; tofu: string };
}

declare module 'vitest' {
  export interface ProvidedContext {
    testStack: TestStack;
  }
}

/** Returns the running stack; throws if the global setup did not provide one. */
export function testStack(): TestStack {
  const stack = inject('testStack');
  if (!stack?.kubeconfigPath)
    throw new Error('test stack: not started (test/env/global-setup.ts did not run)');
  return stack;
}
