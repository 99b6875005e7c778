import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { LABELS } from '../../src/core/job-labels.ts';
import { type StateContent, stateHoldsNothing } from '../../src/core/state-evidence.ts';
import { nameStateSuffix } from '../../src/core/state-identity.ts';
import type { TargetKind } from '../../src/schemas/kinds/api-group.ts';
import type { WaitReason } from '../../src/schemas/kinds/wait-reason.ts';
import { stateContentOf } from '../../src/step/state-content.ts';
import { testStack } from '../env/index.ts';
import { type E2eRun, waitFor } from './harness.ts';
import { checkInvariants, type InvariantScope } from './invariants.ts';

/**
 * What the lifecycle suite adds to the fault suite's invariants (./invariants.ts): what an object's life leaves
 * behind once it settled. Each check is a pure judgement of a read world (unit-tested with fixtures in
 * test/unit/e2e/lifecycle-invariants.test.ts) answering violations, empty when it holds:
 *
 * - no pod of ours (`captf.io/managed`) still Terminating a settle period after its deletion: our pod
 *   finalizer is released by the event that says the pod is being deleted, not by the next sweep;
 * - no state Secret `tfstate-default-<suffix>` or lock Lease `lock-tfstate-default-<suffix>` without its
 *   object, unless the state holds resources (the finalize step keeps those, saying so): nothing else ever
 *   deletes them;
 * - no object whose status shows a Job it runs or waits for (`status.activeJob`, or the Job a Job wait's
 *   condition names) when that Job has finished: a finished Job ends every wait on it.
 */

/** How long a deleted pod of ours may stay Terminating: the kubelet stops it, then our finalizer goes. */
export const TERMINATING_SETTLE_MS = 20_000;

/** Prefix of the default backend's state Secrets (src/core/run-secret-manifest.ts). */
const STATE_PREFIX = 'tfstate-default-';
/** Prefix of its lock Leases: the backend names the Lease after the Secret. */
const LOCK_PREFIX = `lock-${STATE_PREFIX}`;

/**
 * The waits that are about one Job (src/core/wait-table.ts): their condition message names it. The other
 * waits name no Job of the namespace, or name it only as history (a backoff after a failed one).
 */
const JOB_WAITS: readonly WaitReason[] = [
  'JobActive',
  'ImagePullBackOff',
  'CreateContainerConfigError',
  'WaitingForForeignJob',
];

/** An object of ours, as the checks read it. */
export interface LifecycleTarget {
  kind: TargetKind;
  metadata: { name: string; uid?: string };
  status?: {
    stateSuffix?: string;
    activeJob?: { name: string };
    waitReason?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** A pod, as the checks read it. */
export interface LifecyclePod {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
}

/** A Job, as the checks read it. */
export interface LifecycleJob {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string }[] };
}

/** What the checks read of the namespace, at `nowMs` (ms since the epoch). */
export interface LifecycleWorld {
  nowMs: number;
  targets: LifecycleTarget[];
  pods: LifecyclePod[];
  jobs: LifecycleJob[];
  /** Every state Secret of the default backend, by name, with what it holds (src/step/state-content.ts). */
  stateSecrets: { name: string; content: StateContent }[];
  /** Names of every Lease of the namespace. */
  leases: string[];
}

/** Pods of ours whose deletion is older than `settleMs`: held by a finalizer nobody released. */
export function terminatingPodViolations(world: LifecycleWorld, settleMs = TERMINATING_SETTLE_MS): string[] {
  return world.pods
    .filter((pod) => pod.metadata.labels?.[LABELS.managed] === 'true')
    .filter((pod) => {
      const deleted = pod.metadata.deletionTimestamp;
      return deleted !== undefined && Date.parse(deleted) + settleMs < world.nowMs;
    })
    .map((pod) => `pod ${pod.metadata.name}: Terminating since ${pod.metadata.deletionTimestamp}`);
}

/**
 * State Secrets and lock Leases no object names (its recorded `status.stateSuffix`, or the suffix of its kind
 * and name when none is recorded yet), unless the state Secret holds resources (or cannot be shown to hold
 * none: encrypted, unreadable).
 */
export function orphanStateViolations(world: LifecycleWorld): string[] {
  const owned = new Set(
    world.targets.flatMap((t) => [
      ...(t.status?.stateSuffix === undefined ? [] : [t.status.stateSuffix]),
      nameStateSuffix(t.kind, t.metadata.name),
    ]),
  );
  const holding = new Set(
    world.stateSecrets
      .filter((s) => !stateHoldsNothing(s.content))
      .map((s) => s.name.slice(STATE_PREFIX.length)),
  );
  const violations: string[] = [];
  for (const secret of world.stateSecrets) {
    const suffix = secret.name.slice(STATE_PREFIX.length);
    if (!owned.has(suffix) && !holding.has(suffix))
      violations.push(
        `Secret ${secret.name}: no object has its state, and it holds nothing (${secret.content})`,
      );
  }
  for (const lease of world.leases.filter((l) => l.startsWith(LOCK_PREFIX))) {
    const suffix = lease.slice(LOCK_PREFIX.length);
    if (!owned.has(suffix) && !holding.has(suffix))
      violations.push(`Lease ${lease}: no object has its state, and its state holds no resources`);
  }
  return violations;
}

function finished(job: LifecycleJob): boolean {
  return (job.status?.conditions ?? []).some(
    (c) => c.status === 'True' && (c.type === 'Complete' || c.type === 'Failed'),
  );
}

/** Objects whose status shows a Job running or waited for that has finished. */
export function finishedJobWaitViolations(world: LifecycleWorld): string[] {
  const done = world.jobs.filter(finished).map((j) => j.metadata.name);
  const violations: string[] = [];
  for (const target of world.targets) {
    const what = `${target.kind} ${target.metadata.name}`;
    const active = target.status?.activeJob?.name;
    if (active !== undefined && done.includes(active))
      violations.push(`${what}: status.activeJob names ${active}, which has finished`);
    const wait = target.status?.waitReason;
    if (wait === undefined || !JOB_WAITS.includes(wait as WaitReason)) continue;
    const messages = (target.status?.conditions ?? [])
      .filter((c) => c.reason === wait)
      .map((c) => c.message ?? '')
      .join('\n');
    // Job names are DNS labels: a name ends where a character no label holds begins.
    for (const job of done.filter((name) => new RegExp(`(^|[^a-z0-9-])${name}($|[^a-z0-9-])`).test(messages)))
      violations.push(`${what}: waits ${wait} on ${job}, which has finished`);
  }
  return violations;
}

/** The three lifecycle checks of one read world. */
export function lifecycleViolations(world: LifecycleWorld): string[] {
  return [
    ...terminatingPodViolations(world),
    ...orphanStateViolations(world),
    ...finishedJobWaitViolations(world),
  ];
}

async function items<T>(scope: InvariantScope, resource: string): Promise<T[]> {
  const out = await scope.kubectl.run(['get', resource, '-n', scope.namespace, '-o', 'json']);
  return (JSON.parse(out) as { items: T[] }).items;
}

/** Reads the world the lifecycle checks judge, from the live API server. */
export async function readLifecycleWorld(scope: InvariantScope): Promise<LifecycleWorld> {
  const [targets, pods, jobs, secrets, leases] = await Promise.all([
    items<LifecycleTarget>(scope, 'terraformclusters,terraformmachines,terraformmachinepools'),
    items<LifecyclePod>(scope, 'pods'),
    items<LifecycleJob>(scope, 'jobs'),
    items<V1Secret>(scope, 'secrets'),
    items<{ metadata: { name: string } }>(scope, 'leases'),
  ]);
  return {
    nowMs: Date.now(),
    targets,
    pods,
    jobs,
    stateSecrets: secrets
      .filter((s) => s.metadata?.name?.startsWith(STATE_PREFIX))
      .map((s) => ({ name: s.metadata?.name ?? '', content: stateContentOf(s) })),
    leases: leases.map((l) => l.metadata.name),
  };
}

/** The fault suite's invariants plus the lifecycle checks, against the live world now. */
export async function checkLifecycle(scope: InvariantScope): Promise<string[]> {
  const [invariants, world] = await Promise.all([checkInvariants(scope), readLifecycleWorld(scope)]);
  return [...invariants, ...lifecycleViolations(world)];
}

/** Every log the run's handlers and relay wrote so far (its log directory). */
function runLogs(logDir: string): string {
  return readdirSync(logDir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => readFileSync(join(logDir, f), 'utf8'))
    .join('\n');
}

/** The checker's scope of an end-to-end run on the test stack's Redis, with the canary that must show nowhere. */
export function runScope(
  run: Pick<E2eRun, 'namespace' | 'kubectl' | 'keyPrefix' | 'controller'>,
  canary: string,
): InvariantScope {
  return {
    namespace: run.namespace,
    kubectl: run.kubectl,
    keyPrefix: run.keyPrefix,
    redisUrl: testStack().redisUrl,
    handlerUrls: run.controller.handlers.map((h) => h.url),
    logs: () => runLogs(run.controller.logDir),
    canary,
  };
}

/**
 * Waits until {@link checkLifecycle} finds nothing, giving what is in flight time to settle (a Job just
 * finished is bookkept within seconds; a pod just deleted is released); fails listing the violations of the
 * last look, `what` naming the scenario.
 */
export async function expectLifecycleSettled(
  scope: InvariantScope,
  what: string,
  timeoutMs = 120_000,
): Promise<void> {
  let last: string[] = [];
  try {
    await waitFor(
      `${what}: the lifecycle invariants hold`,
      async () => {
        last = await checkLifecycle(scope);
        return last;
      },
      (violations) => violations.length === 0,
      timeoutMs,
      3000,
    );
  } catch {
    expect(last, what).toEqual([]);
  }
}
