// `npm run bench -- fleet [--at-rest-objects=10000] [--at-rest-waiting=0.1] [--at-rest-minutes=12]
// [--at-rest-handlers=2] [--ceiling-seconds=20] [--tick-samples=5]` (the fleet bench's at-rest phase; `npm
// run bench -- fleet-at-rest` runs it alone): what a fleet at rest costs the API server, at fleet scale. The
// objects are created straight through the API, not converged: two templates converge with real OpenTofu
// runs (a TerraformMachine, and a TerraformCluster whose Job policy its machines break), then, with no
// controller running, `--at-rest-objects` TerraformMachines are created, most of them Ready (the machine
// template's spec and status, their own state suffix), `--at-rest-waiting` of them spread over the waits a
// bench can hold without Cluster API (a missing Secret, an unlabelled Secret, pause, an owner not set yet, a
// broken Job policy, a cluster lease, a run lease and the Job slots held in Redis). The controller then
// starts as production runs it (the bundle, dist/controller/server.mjs, with info logging, behind the
// balancer; the relay and timer), takes every object into its state, and once its steps have settled the
// fleet is watched for `--at-rest-minutes`: the handlers' API requests (their /metrics) against the API
// server's ceiling measured in the same run (create + get ConfigMaps, 16 in flight, on the handlers' own
// client), the waiting objects' steps per wait (their info log lines), and `/tick` over the resting
// fleet's schedule, the median of `--tick-samples` calls.
// A dev run: `npm run bench -- fleet-at-rest --at-rest-objects=500 --at-rest-minutes=2`.

import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { ensureBundlesBuilt } from '../functions/bundle.ts';
import { loadKubeConfig, makeKubeApis } from '../src/adapters/kube/connection.ts';
import type { NewCustomObject } from '../src/adapters/kube/custom-object.ts';
import { RequestCounter } from '../src/adapters/kube/request-count.ts';
import { createRedisAdapter } from '../src/adapters/redis/adapter.ts';
import { CLONED_FROM_NAME_ANNOTATION, PAUSED_ANNOTATION } from '../src/core/cluster-api.ts';
import { LABELS } from '../src/core/job-labels.ts';
import { WAIT_TABLE } from '../src/core/wait-table.ts';
import { type LocalController, startLocalController } from '../src/local/local-controller.ts';
import { startLocalStack } from '../src/local/stack.ts';
import { prepareWorkloadNamespace } from '../src/local/workload-namespace.ts';
import type { WaitReason } from '../src/schemas/kinds/wait-reason.ts';
import { measureApiCeiling } from './lib/api-ceiling.ts';
import { cpuMs, deltaCounters, loggedSteps, quantile, scrapeHandlers, totals } from './lib/fleet-probe.ts';
import { FleetReport } from './lib/fleet-report.ts';
import { printMachine } from './lib/machine.ts';
import { pool } from './lib/pool.ts';

const { values: args } = parseArgs({
  // The fleet bench's own options reach this file too (`npm run bench -- fleet …` runs both).
  strict: false,
  options: {
    'at-rest-objects': { type: 'string', default: '10000' },
    'at-rest-waiting': { type: 'string', default: '0.1' },
    // Longer than a wait's shortest safety requeue (600 s + 10 % jitter); each wait's look is also priced
    // apart, by a look at every waiting object after the window.
    'at-rest-minutes': { type: 'string', default: '12' },
    'at-rest-handlers': { type: 'string', default: '2' },
    'ceiling-seconds': { type: 'string', default: '20' },
    'tick-samples': { type: 'string', default: '5' },
  },
});
const OBJECTS = Number(args['at-rest-objects']);
const WAITING_SHARE = Number(args['at-rest-waiting']);
const REST_MS = Number(args['at-rest-minutes']) * 60_000;
const HANDLERS = Number(args['at-rest-handlers']);
const CEILING_MS = Number(args['ceiling-seconds']) * 1000;
const TICK_SAMPLES = Number(args['tick-samples']);

const GROUP = 'infrastructure.cluster.x-k8s.io';
const VERSION = 'v1alpha1';
const API_VERSION = `${GROUP}/${VERSION}`;
const NS = 'fleetscale';
const PROBE_NS = 'fleetscaleprobe';
const KEY_PREFIX = 'scale';
const DRIFT = { interval: '12h', action: 'Report' };
const CONCURRENCY = 16;
/** Leases and slots the bench holds for the waits: beyond the bench's end. */
const HOLD_SECONDS = 4 * 3600;
/** The steps of the start (the relay's initial list: one event per object) have ended: none for this long. */
const QUIET_MS = 20_000;
/** API requests of one no-op step before the waits were woken (the issue's measure): the "before" figures. */
const READS_PER_NOOP_STEP_BEFORE = 4;
/** Each wait's requeue before its waits were woken by events (DESIGN.md section 6 then), seconds. */
const REQUEUE_BEFORE: Partial<Record<WaitReason, number>> = {
  WaitingForDependencies: 30,
  VariablesSecretNotOptedIn: 60,
  Paused: 600,
  WaitingForOwner: 60,
  JobPolicyInvalid: 600,
  WaitingForClusterOperation: 30,
  WaitingForRunLease: 30,
  WaitingForJobSlot: 15,
  StateMissing: 600,
};

const root = join(import.meta.dirname, '..');
const report = new FleetReport();
const log = (line: string) => process.stdout.write(`[fleet-at-rest] ${line}\n`);
const started = performance.now();
const S = '6. at rest at fleet scale';

/** An object the bench creates straight through the API: a create's shape, with its spec. */
type Obj = NewCustomObject & { spec: Record<string, unknown> };
interface Listed {
  metadata: { name: string; finalizers?: string[] };
  spec: Record<string, unknown>;
  status?: Record<string, unknown> & {
    waitReason?: string;
    conditions?: { type: string; status: string }[];
  };
}
const isReady = (o: Listed) =>
  o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

function machine(
  name: string,
  extra: Partial<Obj['metadata']> & { spec?: Record<string, unknown> } = {},
): Obj {
  const { spec, ...metadata } = extra;
  return {
    apiVersion: API_VERSION,
    kind: 'TerraformMachine',
    metadata: { name, namespace: NS, ...metadata },
    // Every machine has the template's inputs: a Ready clone's recorded inputs hash is its own.
    spec: {
      source: { image: 'captf.local/sample-machine:1' },
      variables: { name: 'tmpl', index: 1 },
      driftCheck: DRIFT,
      ...spec,
    },
  };
}

printMachine();
log(
  `${OBJECTS} objects (${(WAITING_SHARE * 100).toFixed(0)} % waiting), ${HANDLERS} handlers, rest ${REST_MS / 60_000} min`,
);
await ensureBundlesBuilt(['server'], log);
const workDir = mkdtempSync(join(tmpdir(), 'captf-bench-fleet-at-rest-'));
const stack = await startLocalStack({ log: () => undefined });
const kc = new KubeConfig();
kc.loadFromFile(stack.info.kubeconfigPath);
const custom = kc.makeApiClient(CustomObjectsApi);
// The handlers' own client (shared keep-alive dispatcher): what the API server serves it is the ceiling.
const apis = makeKubeApis(loadKubeConfig({ kind: 'file', path: stack.info.kubeconfigPath }), {
  requestTimeoutMs: 30_000,
  counter: new RequestCounter(),
});
const redis = createRedisAdapter({ url: stack.info.redisUrl, keyPrefix: KEY_PREFIX });
await redis.waitUntilReady(10_000);
let controller: LocalController | undefined;

const create = (object: Obj) =>
  custom
    .createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: `${object.kind.toLowerCase()}s`,
      body: object,
    })
    .then(() => undefined);
const list = async (kind: string): Promise<Listed[]> =>
  (
    (await custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: `${kind.toLowerCase()}s`,
    })) as { items: Listed[] }
  ).items;

async function waitUntil(what: string, done: () => Promise<string | true>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastLog = 0;
  for (;;) {
    const state = await done();
    if (state === true) return;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs / 1000} s (${state})`);
    if (Date.now() - lastLog > 30_000) {
      lastLog = Date.now();
      log(`${what}: ${state}`);
    }
    await sleep(2000);
  }
}

try {
  // Templates, converged by the controller with real runs.
  controller = await startLocalController({
    stack: stack.info,
    workDir,
    keyPrefix: KEY_PREFIX,
    syncPeriodSeconds: 600,
    log,
  });
  for (const namespace of [NS, PROBE_NS])
    await prepareWorkloadNamespace(controller.kubectl, namespace, stack.info);
  await create({
    apiVersion: API_VERSION,
    kind: 'TerraformCluster',
    metadata: { name: 'pol', namespace: NS, labels: { [LABELS.clusterName]: 'pol' } },
    spec: {
      source: { image: 'captf.local/sample-cluster:1' },
      variables: { name: 'pol', cidr: '10.20.0.0/16' },
      jobs: { activeDeadlineSeconds: 600, lockTimeoutSeconds: 60 },
      defaults: { jobs: { activeDeadlineSeconds: 600, lockTimeoutSeconds: 500 } },
      driftCheck: DRIFT,
    },
  });
  await create(machine('tmpl'));
  await waitUntil(
    'templates Ready',
    async () => {
      const all = [...(await list('TerraformCluster')), ...(await list('TerraformMachine'))];
      return all.length === 2 && all.every(isReady) ? true : `${all.filter(isReady).length}/2 Ready`;
    },
    15 * 60_000,
  );
  await controller.stop();
  controller = undefined;
  const template = (await list('TerraformMachine')).find((o) => o.metadata.name === 'tmpl');
  if (template?.status === undefined) throw new Error('the machine template has no status');

  // The fleet, straight through the API, with no controller running.
  await apis.core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 'plain' }, stringData: { token: 'x' } },
  });
  await redis.runLeases.take(
    { object: { kind: 'TerraformCluster', namespace: NS, name: 'busy' }, clusterName: 'busy' },
    'captf-c-busy-apply-a1-aaaaaa',
    'cluster-writer',
    HOLD_SECONDS,
  );
  for (let i = 0; i < 20; i += 1)
    await redis.jobSlots.take(
      { namespace: NS, job: `captf-m-filler${i}-apply-a1-cccccc`, clusterName: 'full' },
      { installation: 200, cluster: 20 },
      HOLD_SECONDS,
    );
  const WAITS: { reason: WaitReason; make: (name: string) => Obj; applied?: true }[] = [
    {
      reason: 'WaitingForDependencies',
      make: (n) =>
        machine(n, {
          spec: { variablesFrom: [{ name: 'token', secretKeyRef: { name: 'not-there', key: 'token' } }] },
        }),
    },
    {
      reason: 'VariablesSecretNotOptedIn',
      make: (n) =>
        machine(n, {
          spec: { variablesFrom: [{ name: 'token', secretKeyRef: { name: 'plain', key: 'token' } }] },
        }),
    },
    { reason: 'Paused', make: (n) => machine(n, { annotations: { [PAUSED_ANNOTATION]: 'true' } }) },
    {
      reason: 'JobPolicyInvalid',
      make: (n) =>
        machine(n, {
          labels: { [LABELS.clusterName]: 'pol' },
          spec: { jobs: { activeDeadlineSeconds: 300 } },
        }),
    },
    {
      reason: 'WaitingForOwner',
      make: (n) => machine(n, { annotations: { [CLONED_FROM_NAME_ANNOTATION]: 'workers' } }),
    },
    {
      reason: 'WaitingForClusterOperation',
      make: (n) => machine(n, { labels: { [LABELS.clusterName]: 'busy' } }),
    },
    { reason: 'WaitingForRunLease', make: (n) => machine(n) },
    { reason: 'WaitingForJobSlot', make: (n) => machine(n, { labels: { [LABELS.clusterName]: 'full' } }) },
    // Applied once (the template's status) with inputs changed since, and no state Secret: the apply that
    // would follow finds the state lost and waits for a person (a Secret no watch selects).
    {
      reason: 'StateMissing',
      make: (n) => machine(n, { spec: { variables: { name: 'tmpl', index: 2 } } }),
      applied: true,
    },
  ];
  const waitingCount = Math.round(OBJECTS * WAITING_SHARE);
  const perWait = Math.max(1, Math.floor(waitingCount / WAITS.length));
  const waiting: { object: Obj; reason: WaitReason; applied?: true }[] = [];
  WAITS.forEach((wait, w) => {
    for (let i = 0; i < perWait; i += 1)
      waiting.push({
        object: wait.make(`w${w}-${i}`),
        reason: wait.reason,
        ...(wait.applied ? { applied: true as const } : {}),
      });
  });
  for (const { object, reason } of waiting)
    if (reason === 'WaitingForRunLease')
      await redis.runLeases.take(
        { object: { kind: 'TerraformMachine', namespace: NS, name: object.metadata.name } },
        'someone-elses-run',
        'solo',
        HOLD_SECONDS,
      );
  const readyNames = Array.from({ length: OBJECTS - waiting.length }, (_, i) => `r${i}`);
  const { conditions: _c, ...templateStatus } = template.status;
  log(`creating ${readyNames.length} Ready objects and ${waiting.length} waiting ones through the API`);
  const created = performance.now();
  /** The template's status, as a machine of `name` applied once would have it (no state Secret here). */
  const applyStatus = (name: string) =>
    custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: 'terraformmachines',
        name,
        body: {
          status: { ...templateStatus, conditions: template.status?.conditions, stateSuffix: `m-${name}` },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  await pool(readyNames, CONCURRENCY, async (name) => {
    await create(machine(name, { finalizers: template.metadata.finalizers ?? [] }));
    await applyStatus(name);
  });
  await pool(waiting, CONCURRENCY, async ({ object, applied }) => {
    if (!applied) return create(object);
    await create({
      ...object,
      metadata: { ...object.metadata, finalizers: template.metadata.finalizers ?? [] },
    });
    await applyStatus(object.metadata.name);
  });
  const createSeconds = (performance.now() - created) / 1000;

  // The controller as production runs it.
  controller = await startLocalController({
    stack: stack.info,
    workDir,
    keyPrefix: KEY_PREFIX,
    tickIntervalMs: 5000,
    syncPeriodSeconds: 600,
    logLevel: 'info',
    handlers: HANDLERS,
    entry: 'bundle',
    log,
  });
  const running = controller;
  const urls = running.handlers.map((h) => h.url);
  const pids = running.handlers.map((h) => h.process.pid);
  const expected = new Map(waiting.map((w) => [w.object.metadata.name, w.reason]));
  await waitUntil(
    'every object in its state',
    async () => {
      const machines = await list('TerraformMachine');
      const wrong = machines.filter((o) =>
        expected.has(o.metadata.name)
          ? o.status?.waitReason !== expected.get(o.metadata.name)
          : o.metadata.name.startsWith('r') && !isReady(o),
      );
      return wrong.length === 0
        ? true
        : `${wrong.length} not yet, e.g. ${wrong
            .slice(0, 3)
            .map((o) => `${o.metadata.name}: ${o.status?.waitReason ?? (isReady(o) ? 'Ready' : 'not Ready')}`)
            .join(', ')}`;
    },
    60 * 60_000,
  );
  // The start's steps (one per object, from the relay's initial list) end before the window.
  let lastSteps = -1;
  let quietSince = Date.now();
  await waitUntil(
    'the start settled',
    async () => {
      const steps = totals(await scrapeHandlers(urls)).steps;
      if (steps !== lastSteps) {
        lastSteps = steps;
        quietSince = Date.now();
      }
      return Date.now() - quietSince >= QUIET_MS ? true : `${steps} steps so far`;
    },
    60 * 60_000,
  );

  log(`watching ${OBJECTS} objects at rest for ${REST_MS / 60_000} min`);
  const before = await scrapeHandlers(urls);
  const cpuBefore = cpuMs(pids);
  const from = Date.now();
  await sleep(REST_MS);
  const to = Date.now();
  const delta = deltaCounters(before, await scrapeHandlers(urls));
  const cpuRest = cpuMs(pids) - cpuBefore;
  const seconds = (to - from) / 1000;
  const t = totals(delta);
  const loadDuring = loadavg();

  // The API server's ceiling, in the same run, on the handlers' client.
  const ceiling = await measureApiCeiling(apis.core, PROBE_NS, CEILING_MS, CONCURRENCY);

  // /tick over the resting fleet's schedule: the median of several calls, one handler, none due.
  const tickMs: number[] = [];
  for (let i = 0; i < TICK_SAMPLES; i += 1) {
    const at = performance.now();
    const answer = await fetch(`${urls[0]}/tick`, {
      method: 'POST',
      headers: { authorization: `Bearer ${running.token ?? ''}` },
    });
    if (!answer.ok) throw new Error(`/tick: ${answer.status}`);
    tickMs.push(performance.now() - at);
    await sleep(1000);
  }

  // Each waiting object looked at once more, as its timer looks at it (POST /reconcile: no event, the same
  // step): what a wait's safety net costs an object is that look's requests over the requeue it scheduled
  // (src/core/safety-requeue.ts), whatever the window happened to see come due.
  const looksFrom = Date.now();
  await pool(
    waiting.map((w, i) => ({ name: w.object.metadata.name, url: urls[i % urls.length] })),
    CONCURRENCY,
    async ({ name, url }) => {
      const answer = await fetch(`${url}/reconcile/TerraformMachine/${NS}/${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${running.token ?? ''}` },
      });
      if (!answer.ok) throw new Error(`/reconcile ${name}: ${answer.status}`);
      await answer.arrayBuffer();
    },
  );
  // The handlers' log lines are written asynchronously: give them a moment to reach the files.
  await sleep(2000);
  const looks = loggedSteps(running.handlers.map((h) => h.process.logPath)).filter(
    (s) => s.atMs >= looksFrom && s.namespace === NS && expected.has(s.name),
  );

  const perObjectMinute = (requests: number, objects: number) => (requests / objects / seconds) * 60;
  report.add({
    section: S,
    figure: 'objects at rest',
    value: OBJECTS,
    unit: 'objects',
    target: '10,000',
    check: (v) => v >= 10_000,
    decimals: 0,
    note: `${readyNames.length} Ready, ${perWait} in each of ${WAITS.length} waits; created through the API in ${createSeconds.toFixed(0)} s`,
  });
  report.add({ section: S, figure: 'window', value: seconds, unit: 's', target: '', decimals: 0 });
  report.add({
    section: S,
    figure: 'API server ceiling (same run)',
    value: ceiling,
    unit: 'req/s',
    target: '',
    decimals: 1,
    note: `create + get ConfigMaps, ${CONCURRENCY} in flight, ${CEILING_MS / 1000} s`,
  });
  report.add({
    section: S,
    figure: 'controller requests/s at rest',
    value: t.requests / seconds,
    unit: 'req/s',
    target: '',
    decimals: 3,
    note: `${t.steps} steps; ${JSON.stringify(delta.requests)}`,
  });
  report.add({
    section: S,
    figure: 'controller requests/s at rest / ceiling',
    value: (t.requests / seconds / ceiling) * 100,
    unit: '%',
    target: '≤ 2',
    check: (v) => v <= 2,
    decimals: 3,
    note: 'the window as it came (a wait whose look comes after it is priced below)',
  });
  report.add({
    section: S,
    figure: 'requests per object per minute (all)',
    value: perObjectMinute(t.requests, OBJECTS),
    unit: 'req',
    target: '',
    decimals: 4,
  });
  // Per wait: its objects' steps in the window (logged at info) and the requests each step's log line says it
  // sent. Requests outside steps (an event's owner lookup) are the Ready row's, with the Ready objects' steps.
  const steps = loggedSteps(running.handlers.map((h) => h.process.logPath)).filter(
    (s) => s.atMs >= from && s.atMs <= to && s.namespace === NS,
  );
  const unmeasured = steps.filter((s) => s.kubeRequests === undefined).length;
  if (unmeasured > 0)
    throw new Error(`${unmeasured} step log lines without kubeRequests: the handlers are too old`);
  let waitingRequests = 0;
  let waitingSteadyPerMinute = 0;
  for (const wait of WAITS) {
    const waitSteps = steps.filter((s) => expected.get(s.name) === wait.reason);
    waitingRequests += waitSteps.reduce((sum, s) => sum + (s.kubeRequests ?? 0), 0);
    const waitLooks = looks.filter((s) => expected.get(s.name) === wait.reason);
    const unpriced = waitLooks.filter(
      (s) => s.reason !== wait.reason || s.kubeRequests === undefined || !s.requeueAfterSeconds,
    );
    if (waitLooks.length !== perWait || unpriced.length > 0)
      throw new Error(
        `${wait.reason}: ${waitLooks.length} looks of ${perWait} objects, ${unpriced.length} not in the wait or without their cost (e.g. ${JSON.stringify(unpriced[0])})`,
      );
    // Requests per object per minute, each look at the rate its own requeue sets.
    const price =
      waitLooks.reduce((sum, s) => sum + (s.kubeRequests ?? 0) / ((s.requeueAfterSeconds ?? 1) / 60), 0) /
      waitLooks.length;
    waitingSteadyPerMinute += price * perWait;
    const requests = waitLooks.reduce((sum, s) => sum + (s.kubeRequests ?? 0), 0) / waitLooks.length;
    const requeues = waitLooks.map((s) => s.requeueAfterSeconds ?? 0);
    const requeueBefore = REQUEUE_BEFORE[wait.reason] ?? Number.NaN;
    const eventDriven = WAIT_TABLE[wait.reason].safetyNet;
    report.add({
      section: S,
      figure: `${wait.reason}: requests per object per minute`,
      value: price,
      unit: 'req',
      target: eventDriven ? '≤ 0.1' : '1 read per requeue',
      ...(eventDriven ? { check: (v: number) => v <= 0.1 } : {}),
      decimals: 4,
      note: `a look costs ${requests.toFixed(2)} requests and is followed by the next in ${Math.min(...requeues)}–${Math.max(...requeues)} s (${perWait} looks; ${waitSteps.length} steps in the window); before: requeue ${requeueBefore} s, ${((60 / requeueBefore) * READS_PER_NOOP_STEP_BEFORE).toFixed(2)} req/object/min`,
    });
  }
  // The window sees a wait's looks only where they come due in it: the steady state prices every waiting
  // object by its look, and the Ready ones by the window.
  const readyPerMinute = Math.max(0, t.requests - waitingRequests) / (seconds / 60);
  const steady = (readyPerMinute + waitingSteadyPerMinute) / 60;
  report.add({
    section: S,
    figure: 'controller requests/s at rest, steady state',
    value: steady,
    unit: 'req/s',
    target: '',
    decimals: 3,
    note: `Ready objects as the window saw them (${readyPerMinute.toFixed(1)} req/min), each waiting object at its look's price (${waitingSteadyPerMinute.toFixed(1)} req/min)`,
  });
  report.add({
    section: S,
    figure: 'controller requests/s at rest, steady state / ceiling',
    value: (steady / ceiling) * 100,
    unit: '%',
    target: '≤ 2',
    check: (v) => v <= 2,
    decimals: 3,
  });
  report.add({
    section: S,
    figure: 'Ready: requests per object per minute',
    value: perObjectMinute(Math.max(0, t.requests - waitingRequests), readyNames.length),
    unit: 'req',
    target: '',
    decimals: 4,
  });
  report.add({
    section: S,
    figure: 'handler CPU at rest',
    value: (cpuRest / (seconds * 1000)) * 100,
    unit: '% of a core',
    target: '',
    decimals: 2,
    note: `${HANDLERS} processes (the bundle, info logging), /tick every 5 s; load average ${loadDuring.map((l) => l.toFixed(2)).join(' ')} (the machine is shared)`,
  });
  report.add({
    section: S,
    figure: `/tick over ${OBJECTS} scheduled, none due: median of ${TICK_SAMPLES}`,
    value: quantile(tickMs, 0.5),
    unit: 'ms',
    target: '',
    decimals: 1,
    note: `samples ${tickMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
  });
} finally {
  await controller?.stop().catch(() => undefined);
  await redis.close();
  report.print();
  const wallSeconds = (performance.now() - started) / 1000;
  const path = report.write(
    join(root, 'bench', 'results'),
    {
      bench: 'fleet-at-rest',
      date: new Date().toISOString(),
      options: {
        objects: OBJECTS,
        waitingShare: WAITING_SHARE,
        restMinutes: REST_MS / 60_000,
        handlers: HANDLERS,
        ceilingSeconds: CEILING_MS / 1000,
        tickSamples: TICK_SAMPLES,
      },
      wallSeconds,
    },
    'fleet-at-rest',
  );
  printMachine();
  process.stdout.write(`fleet at-rest bench: ${wallSeconds.toFixed(0)} s; results ${path}\n`);
  await stack.stop();
  if (!process.env.CAPTF_KEEP_STACK) rmSync(workDir, { recursive: true, force: true });
}
