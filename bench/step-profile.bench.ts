// `npm run bench -- step-profile [--profile-objects=40] [--profile-warmup=3] [--profile-interval-us=100]
// [--profile-noop-rounds=5]` (issue 22): where the CPU of the three step kinds goes. On the local stack
// (etcd, kube-apiserver, kube-controller-manager, Redis; no node: Job pods stay Pending and the bench plays
// the kubelet, writing a pod's successful end through `/status`, bench/lib/played-kubelet.ts), the real
// reconcile step runs in this process over the real Kubernetes and Redis adapters and the production step
// metrics (the Redis fleet store), called directly and unshadowed (no dry run), one step at a time. The
// step writes no log (the route logs its outcome), so no logger is on the measured path. Three kinds, each
// over `--profile-objects` TerraformMachines after `--profile-warmup` objects not measured (JIT):
// (a) the no-op step of an object at rest (Ready, idle; `--profile-noop-rounds` steps per object, as it is
// the cheapest), (b) the Job-creating step (the first Job, after the finalizer step), (c) the bookkeeping
// step (that Job ended with a successful apply and a result). Each kind runs twice over different objects:
// once unprofiled (its CPU and wall time without the profiler's cost), once under `node:inspector`'s
// sampling profiler (every `--profile-interval-us`). Per kind: CPU ms per step (process.cpuUsage, user +
// system, all threads; and the main thread alone), wall ms per step, the adapter's API requests per step
// (counted on the wire), and the profile's top frames (`(idle)` left out) and areas by self time (our src
// folders, node_modules packages, Node internals, V8's pseudo-frames) as % of the kind's samples, % of its
// busy (not idle) samples, and that busy share of the main thread's CPU ms per step; the self time by
// owner (ours, node_modules, Node.js, V8 and native, idle); and our own frames (src/, functions/) by total
// time (self plus synchronous callees). Then the floor of it that is the Kubernetes client's: CPU per call of
// three requests every step makes, straight through client-node with nothing of ours around them, and each
// kind's requests times the cheapest of them (measureClientFloor). Prints the tables, writes
// bench/results/step-profile-<date>.json and the raw .cpuprofile files (open them in Chrome DevTools) into a temp directory whose path it prints.
// About a minute; a dev run:
// `npm run bench -- step-profile --profile-objects=5 --profile-warmup=2`.

import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { systemClock } from '../src/adapters/clock.ts';
import type { KubeAdapter } from '../src/adapters/kube/adapter.ts';
import { createKubeAdapter } from '../src/adapters/kube/adapter.ts';
import { type KubeApis, loadKubeConfig, makeKubeApis } from '../src/adapters/kube/connection.ts';
import { RequestCounter, type RequestCounts } from '../src/adapters/kube/request-count.ts';
import { CUSTOM_RESOURCES } from '../src/adapters/kube/resources.ts';
import { createRedisAdapter } from '../src/adapters/redis/adapter.ts';
import { LABELS } from '../src/core/job-labels.ts';
import type { ObjectRef } from '../src/core/object-ref.ts';
import type { StepOutcome } from '../src/core/step-outcome.ts';
import { applyClusterResources } from '../src/local/cluster-resources.ts';
import { kubectlFor } from '../src/local/kubectl.ts';
import { startLocalStack } from '../src/local/stack.ts';
import { createRedisFleetStore } from '../src/metrics/redis-fleet-store.ts';
import { createMetrics } from '../src/metrics/registry.ts';
import { NO_FAILPOINTS } from '../src/step/failpoints.ts';
import { createReconcileStep } from '../src/step/step.ts';
import { stepMetricsOf } from '../src/step/step-metrics.ts';
import { CpuProfiler, type SelfTime, selfTimes } from './lib/cpu-profile.ts';
import { printMachine } from './lib/machine.ts';
import { finishJobSucceeded, type PlayedKubelet } from './lib/played-kubelet.ts';
import { pool } from './lib/pool.ts';
import { printTable } from './lib/table.ts';

const { values: args } = parseArgs({
  // Options meant for other bench files reach this one too (`npm run bench -- --x=1` runs them all).
  strict: false,
  options: {
    'profile-objects': { type: 'string', default: '40' },
    'profile-warmup': { type: 'string', default: '3' },
    'profile-interval-us': { type: 'string', default: '100' },
    'profile-noop-rounds': { type: 'string', default: '5' },
  },
});
const OBJECTS = Number(args['profile-objects']);
const WARMUP = Number(args['profile-warmup']);
const INTERVAL_US = Number(args['profile-interval-us']);
const NOOP_ROUNDS = Number(args['profile-noop-rounds']);
const TOP_FRAMES = 12;
/** Calls of each request in the client's floor (measureClientFloor). */
const CLIENT_CALLS = 200;
const TOP_AREAS = 8;

const NS = 'stepprofile';
const KEY_PREFIX = 'prof';
const RUNNER_IMAGE = 'registry.example.com/captf/runner:bench';
const MODULE_IMAGE = 'registry.example.com/modules/demo:1.0.0';
/** Jobs ended by the played kubelet at once. */
const FINISH_CONCURRENCY = 8;

const root = realpathSync(join(import.meta.dirname, '..'));
const log = (line: string) => process.stdout.write(`[step-profile] ${line}\n`);
const started = performance.now();

/** One pass of one kind over a set of objects: its cost, and its profile when profiled. */
interface Pass {
  steps: number;
  cpuMs: number;
  threadCpuMs: number;
  wallMs: number;
  requests: RequestCounts;
  outcomes: StepOutcome[];
}

/** A kind's figures as printed and written. */
interface KindResult {
  kind: string;
  steps: number;
  outcome: string;
  cpuMsPerStep: number;
  threadCpuMsPerStep: number;
  cpuMsPerStepUnprofiled: number;
  wallMsPerStep: number;
  wallMsPerStepUnprofiled: number;
  requestsPerStep: number;
  requestsByKind: Record<string, number>;
  samples: number;
  busySamples: number;
  profile: string;
  topFrames: SelfTime[];
  topAreas: SelfTime[];
  /** Self time by whose code it is: ours, node_modules, Node.js, V8 and native, idle. */
  owners: SelfTime[];
  /** Our own frames (src/, functions/) by total time: self plus what they call synchronously. */
  topOwnTotal: SelfTime[];
}

/** The Kubernetes client's own CPU for one request of a kind, with no step around it. */
interface ClientRequestCost {
  request: string;
  calls: number;
  cpuMsPerCall: number;
  wallMsPerCall: number;
}

/**
 * The floor of a step's CPU that is the Kubernetes client's: `CLIENT_CALLS` calls, one at a time, of each of
 * three requests every step kind makes (get the object, list its Jobs by its owner label, merge-patch its
 * status with what it already holds), straight through client-node's generated APIs over the adapter's own
 * connection code (src/adapters/kube/connection.ts), with nothing of ours around them.
 */
async function measureClientFloor(apis: KubeApis, name: string): Promise<ClientRequestCost[]> {
  const resource = CUSTOM_RESOURCES.TerraformMachine;
  const object = (await apis.custom.getNamespacedCustomObject({ ...resource, namespace: NS, name })) as {
    metadata: { uid: string };
    status?: { ready?: boolean };
  };
  const calls: [string, () => Promise<unknown>][] = [
    [
      'get terraformmachines',
      () => apis.custom.getNamespacedCustomObject({ ...resource, namespace: NS, name }),
    ],
    [
      "list jobs (one object's)",
      () =>
        apis.batch.listNamespacedJob({
          namespace: NS,
          labelSelector: `${LABELS.ownerUid}=${object.metadata.uid}`,
        }),
    ],
    [
      'patch terraformmachines/status (no change)',
      () =>
        apis.custom.patchNamespacedCustomObjectStatus(
          { ...resource, namespace: NS, name, body: { status: { ready: object.status?.ready ?? false } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
    ],
  ];
  const costs: ClientRequestCost[] = [];
  for (const [request, call] of calls) {
    for (let i = 0; i < WARMUP * 10; i++) await call();
    const cpu = process.cpuUsage();
    const at = performance.now();
    for (let i = 0; i < CLIENT_CALLS; i++) await call();
    const wallMs = performance.now() - at;
    const spent = process.cpuUsage(cpu);
    costs.push({
      request,
      calls: CLIENT_CALLS,
      cpuMsPerCall: (spent.user + spent.system) / 1000 / CLIENT_CALLS,
      wallMsPerCall: wallMs / CLIENT_CALLS,
    });
  }
  return costs;
}

printMachine();
/** The 1-minute load average when the bench started: figures from a loaded machine are not comparable. */
const loadBefore = loadavg()[0] ?? 0;
const profilesDir = mkdtempSync(join(tmpdir(), 'captf-bench-step-profile-'));
const stack = await startLocalStack({ log: () => undefined });
const kubeconfig = { kind: 'file' as const, path: stack.info.kubeconfigPath };
// The bench's own client (creates objects, plays the kubelet): its requests are not the step's.
const apis = makeKubeApis(loadKubeConfig(kubeconfig), {
  requestTimeoutMs: 30_000,
  counter: new RequestCounter(),
});
const kube: KubeAdapter = createKubeAdapter({
  source: kubeconfig,
  clock: systemClock,
  reporter: { controller: 'captf.io/controller', instance: 'step-profile' },
});
const redis = createRedisAdapter({ url: stack.info.redisUrl, keyPrefix: KEY_PREFIX });
const profiler = new CpuProfiler();
const results: KindResult[] = [];
const clientFloor: ClientRequestCost[] = [];
try {
  await applyClusterResources(kubectlFor(stack.info.kubectlPath, stack.info.kubeconfigPath), root);
  await apis.core.createNamespace({ body: { metadata: { name: NS } } });
  await redis.waitUntilReady(10_000);
  let metricsErrors = 0;
  const onMetricsError = () => {
    metricsErrors += 1;
  };
  const fleet = createRedisFleetStore(redis.client, KEY_PREFIX);
  const metrics = createMetrics(fleet, onMetricsError, () => kube.requestCounts());
  const step = createReconcileStep({
    kube,
    redis,
    clock: systemClock,
    config: { runnerImage: RUNNER_IMAGE, maxActiveJobs: 200, clusterMaxActiveJobs: 20 },
    failpoints: NO_FAILPOINTS,
    metrics: stepMetricsOf(metrics, fleet, onMetricsError),
  });
  const node: PlayedKubelet = {
    core: apis.core,
    batch: apis.batch,
    namespace: NS,
    runnerImage: RUNNER_IMAGE,
    moduleImage: MODULE_IMAGE,
  };

  const names = {
    warm: Array.from({ length: WARMUP }, (_, i) => `warm-${i}`),
    plain: Array.from({ length: OBJECTS }, (_, i) => `plain-${i}`),
    profiled: Array.from({ length: OBJECTS }, (_, i) => `prof-${i}`),
  };
  const all = [...names.warm, ...names.plain, ...names.profiled];
  const refOf = (name: string): ObjectRef => ({ kind: 'TerraformMachine', namespace: NS, name });
  const resource = CUSTOM_RESOURCES.TerraformMachine;
  log(
    `creating ${all.length} TerraformMachines (${WARMUP} warm-up, ${OBJECTS} unprofiled, ${OBJECTS} profiled)`,
  );
  await pool(all, 16, async (name) => {
    await apis.custom.createNamespacedCustomObject({
      ...resource,
      namespace: NS,
      body: {
        apiVersion: `${resource.group}/${resource.version}`,
        kind: 'TerraformMachine',
        metadata: { name, namespace: NS },
        spec: { source: { image: MODULE_IMAGE }, variables: { name, index: 1 } },
      },
    });
  });

  /** Steps each object once, one at a time; throws naming the objects whose outcome was not `expected`. */
  const run = async (
    objects: readonly string[],
    expected: (o: StepOutcome) => boolean,
    what: string,
  ): Promise<Pass> => {
    kube.takeRequestCounts();
    const outcomes: StepOutcome[] = [];
    const cpu = process.cpuUsage();
    const thread = process.threadCpuUsage();
    const at = performance.now();
    for (const name of objects) outcomes.push(await step(refOf(name)));
    const wallMs = performance.now() - at;
    const cpuSpent = process.cpuUsage(cpu);
    const threadSpent = process.threadCpuUsage(thread);
    const requests = kube.takeRequestCounts();
    const wrong = outcomes.filter((o) => !expected(o));
    if (wrong.length > 0)
      throw new Error(
        `${what}: ${wrong.length} unexpected outcomes, e.g. ${wrong
          .slice(0, 3)
          .map((o) => `${o.ref.name}: ${o.action}/${o.reason} ${o.message ?? ''}`)
          .join('; ')}`,
      );
    return {
      steps: objects.length,
      cpuMs: (cpuSpent.user + cpuSpent.system) / 1000,
      threadCpuMs: (threadSpent.user + threadSpent.system) / 1000,
      wallMs,
      requests,
      outcomes,
    };
  };

  /** A kind: warm-up, then the unprofiled pass, then the profiled pass; its figures go to `results`. */
  const measureKind = async (
    kind: string,
    file: string,
    expected: (o: StepOutcome) => boolean,
    rounds = 1,
  ): Promise<StepOutcome[]> => {
    const repeated = (objects: readonly string[]) => Array.from({ length: rounds }, () => objects).flat();
    log(
      `${kind}: ${WARMUP} warm-up steps, ${OBJECTS * rounds} unprofiled, ${OBJECTS * rounds} profiled (${rounds} per object)`,
    );
    const warm = await run(names.warm, expected, `${kind} (warm-up)`);
    const plain = await run(repeated(names.plain), expected, `${kind} (unprofiled)`);
    const { value: profiled, profile } = await profiler.profile(() =>
      run(repeated(names.profiled), expected, `${kind} (profiled)`),
    );
    const path = join(profilesDir, `${file}.cpuprofile`);
    writeFileSync(path, JSON.stringify(profile));
    const summary = selfTimes(profile, root, profiled.threadCpuMs / profiled.steps);
    const first = profiled.outcomes[0];
    results.push({
      kind,
      steps: profiled.steps,
      outcome: first ? `${first.action}/${first.reason}` : '',
      cpuMsPerStep: profiled.cpuMs / profiled.steps,
      threadCpuMsPerStep: profiled.threadCpuMs / profiled.steps,
      cpuMsPerStepUnprofiled: plain.cpuMs / plain.steps,
      wallMsPerStep: profiled.wallMs / profiled.steps,
      wallMsPerStepUnprofiled: plain.wallMs / plain.steps,
      requestsPerStep: profiled.requests.total / profiled.steps,
      requestsByKind: Object.fromEntries(
        Object.entries(profiled.requests.byRequest).map(([request, count]) => [
          request,
          count / profiled.steps,
        ]),
      ),
      samples: summary.samples,
      busySamples: summary.busySamples,
      profile: path,
      // The event loop waiting for answers is an area, not a frame to cut.
      topFrames: summary.frames.filter((f) => f.name !== '(idle)').slice(0, TOP_FRAMES),
      topAreas: summary.areas.slice(0, TOP_AREAS),
      owners: summary.owners,
      topOwnTotal: summary.own.slice(0, TOP_FRAMES),
    });
    return [...warm.outcomes, ...plain.outcomes, ...profiled.outcomes];
  };

  await profiler.open(INTERVAL_US);
  log('finalizer steps (not measured)');
  await run(all, (o) => o.action === 'none' && o.reason === 'FinalizerAdded', 'finalizer step');
  const created = await measureKind('(b) Job-creating', 'job-creating', (o) => o.action === 'created');
  log(`playing the kubelet: ${created.length} Jobs end with a successful apply`);
  await pool(created, FINISH_CONCURRENCY, (o) => finishJobSucceeded(node, o.job ?? ''));
  await measureKind('(c) bookkeeping', 'bookkeeping', (o) => o.action === 'bookkept');
  await measureKind(
    '(a) no-op at rest',
    'no-op',
    (o) => o.action === 'none' && o.reason === 'UpToDate',
    NOOP_ROUNDS,
  );
  if (metricsErrors > 0) log(`${metricsErrors} step metrics writes failed`);
  clientFloor.push(...(await measureClientFloor(apis, names.plain[0] ?? '')));
} finally {
  profiler.close();
  await redis.close();
  await stack.stop();
}

const order = ['(a) no-op at rest', '(b) Job-creating', '(c) bookkeeping'];
results.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
printTable(
  `per step kind (one step at a time; profiled every ${INTERVAL_US} µs)`,
  [
    'kind',
    'steps',
    'CPU ms/step',
    'main thread',
    'unprofiled',
    'wall ms/step',
    'unprofiled',
    'requests/step',
    'samples',
    'busy',
    'outcome',
  ],
  results.map((r) => [
    r.kind,
    r.steps,
    r.cpuMsPerStep,
    r.threadCpuMsPerStep,
    r.cpuMsPerStepUnprofiled,
    r.wallMsPerStep,
    r.wallMsPerStepUnprofiled,
    r.requestsPerStep,
    r.samples,
    r.busySamples,
    r.outcome,
  ]),
  [0, 0, 2, 2, 2, 2, 2, 1, 0, 0],
);
for (const r of results) {
  printTable(
    `${r.kind}: top ${TOP_FRAMES} frames by self time ((idle) left out)`,
    ['frame', '% samples', '% busy', 'CPU ms/step'],
    r.topFrames.map((f) => [f.name, f.percent, f.busyPercent, f.cpuMsPerUnit]),
    [0, 1, 1, 3],
  );
  printTable(
    `${r.kind}: top ${TOP_AREAS} areas by self time`,
    ['area', '% samples', '% busy', 'CPU ms/step'],
    r.topAreas.map((a) => [a.name, a.percent, a.busyPercent, a.cpuMsPerUnit]),
    [0, 1, 1, 3],
  );
  printTable(
    `${r.kind}: self time by owner`,
    ['owner', '% samples', '% busy', 'CPU ms/step'],
    r.owners.map((o) => [o.name, o.percent, o.busyPercent, o.cpuMsPerUnit]),
    [0, 1, 1, 3],
  );
  printTable(
    `${r.kind}: our top ${TOP_FRAMES} frames by total time (self + synchronous callees)`,
    ['frame', '% samples', '% busy', 'CPU ms/step'],
    r.topOwnTotal.map((f) => [f.name, f.percent, f.busyPercent, f.cpuMsPerUnit]),
    [0, 1, 1, 3],
  );
  process.stdout.write(`requests per step: ${JSON.stringify(r.requestsByKind)}\n`);
}
printTable(
  `the Kubernetes client alone (client-node over the adapter's connection, ${CLIENT_CALLS} calls each, one at a time)`,
  ['request', 'CPU ms/call', 'wall ms/call'],
  clientFloor.map((c) => [c.request, c.cpuMsPerCall, c.wallMsPerCall]),
  [0, 3, 3],
);
/** The cheapest request's CPU: a step's requests cost at least this many ms each, with nothing of ours. */
const cheapestMs = Math.min(...clientFloor.map((c) => c.cpuMsPerCall));
const floors = results.map((r) => ({
  kind: r.kind,
  requestsPerStep: r.requestsPerStep,
  clientFloorMs: r.requestsPerStep * cheapestMs,
  cpuMsPerStepUnprofiled: r.cpuMsPerStepUnprofiled,
}));
printTable(
  "per step kind: the client's floor (its requests × the cheapest request's CPU) against the step's CPU",
  ['kind', 'requests/step', 'client floor ms', 'step CPU ms (unprofiled)', 'floor share'],
  floors.map((f) => [
    f.kind,
    f.requestsPerStep,
    f.clientFloorMs,
    f.cpuMsPerStepUnprofiled,
    `${((100 * f.clientFloorMs) / f.cpuMsPerStepUnprofiled).toFixed(0)} %`,
  ]),
  [0, 1, 2, 2, 0],
);
const wallSeconds = (performance.now() - started) / 1000;
const resultsDir = join(root, 'bench', 'results');
mkdirSync(resultsDir, { recursive: true });
const resultsPath = join(resultsDir, `step-profile-${new Date().toISOString().slice(0, 10)}.json`);
writeFileSync(
  resultsPath,
  `${JSON.stringify(
    {
      bench: 'step-profile',
      date: new Date().toISOString(),
      options: { objects: OBJECTS, warmup: WARMUP, intervalUs: INTERVAL_US, noopRounds: NOOP_ROUNDS },
      machine: {
        node: process.version,
        cores: availableParallelism(),
        loadAverage1mBefore: loadBefore,
        loadAverage1mAfter: loadavg()[0] ?? 0,
      },
      wallSeconds,
      kinds: results.map(({ profile: _profile, ...r }) => r),
      clientFloor: { requests: clientFloor, cheapestCpuMsPerRequest: cheapestMs, byKind: floors },
    },
    null,
    2,
  )}\n`,
);
printMachine();
process.stdout.write(
  `step profile bench: ${wallSeconds.toFixed(0)} s; results ${resultsPath}; profiles ${profilesDir}\n`,
);
