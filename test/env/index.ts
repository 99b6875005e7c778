import { inject } from 'vitest';
import type { HostPort } from '../../src/adapters/redis/topology.ts';
import type { CapiManagerInfo } from '../../src/local/capi-manager.ts';
import type { StackInfo } from '../../src/local/stack.ts';

/**
 * The one entry point tests use to reach the real local stack started by test/env/global-setup.ts
 * (STYLE.md habit 9). Throws when the stack is not there: a missing component fails loudly, never skips.
 * Beside the stack of the main job (control plane, Redis, tofu, kubectl, Knative's adapters; see
 * src/local/stack.ts), the test env runs a Redis Cluster and Sentinel for the tests that run on every Redis
 * topology (issue 12), and Cluster API's real core manager (issue 11).
 */
export interface TestStack extends StackInfo {
  /** A Redis Cluster on loopback (3 masters, 3 replicas). */
  redisCluster: { kind: 'cluster'; nodes: HostPort[] };
  /** A master and a replica under 3 sentinels on loopback. */
  redisSentinel: { kind: 'sentinel'; sentinels: HostPort[]; masterName: string };
  /**
   * Cluster API v1.14.2's core manager (src/local/capi-manager.ts), one per test run, shared by every file:
   * its CRDs, conversion and admission webhooks are installed; its controllers reconcile every namespace.
   */
  capi: CapiManagerInfo;
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
