import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRelayProcess } from '../../../functions/relay.ts';
import { createKubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import type { RequestCounts } from '../../../src/adapters/kube/request-count.ts';
import {
  apiServerSourceConfig,
  prepareEventSourceIdentity,
  readApiServerSource,
  startApiServerSourceAdapter,
} from '../../../src/local/knative-sources.ts';
import { kubectlFor } from '../../../src/local/kubectl.ts';
import type { ManagedProcess } from '../../../src/local/process.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createStepEnv,
  eventually,
  finishJob,
  jobsOf,
  result,
  type StepEnv,
  statusOf,
} from '../step/harness.ts';
import { handlersOver } from './event-app.ts';

// What an event about an object the controller has already seen costs, on the real event sources, which
// send Resource mode as shipped. Every status or metadata write of a step comes back as an update event
// about a version the step has already seen, and a restarted bundled relay relists and sends an event for
// every object; each carries its object, so each ends at Redis checks without an API request: a version
// already handled is a Duplicate, a running or bookkept Job and an uneventful pod change nothing a step
// reads (src/core/event-relevance.ts). Knative's own receive adapter, restarted, replays nothing: its informers hand
// the initial list to the store's Replace, which Knative's delegate ignores (pkg/adapter/apiserver/
// delegate.go), so a change made while it was down reaches the step only through the sweep
// (test/e2e/knative.test.ts checks that). The handlers run in this process over the real step, Redis and API
// server, so the Kubernetes adapter's request counter (src/adapters/kube/request-count.ts) sees every
// request they send; /events requests are taken one at a time here so each request's share is exact. Both
// sources watch more than this file's namespace (the receive adapter is limited to it; the relay cannot
// be): events about other namespaces are answered here without reaching the handlers.

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const MACHINES = ['m-1', 'm-2', 'm-3'];

/** One /events request about this file's namespace as the handlers answered it, with its API requests. */
interface Delivery {
  type: string;
  kind: string;
  name: string;
  status: number;
  reason: string | undefined;
  requests: RequestCounts;
}

let env: StepEnv;
/** The env with a Kubernetes adapter of its own: the test's reads stay out of the handlers' count. */
let view: StepEnv;
let app: FastifyInstance;
let adapter: ManagedProcess | undefined;
let workDir: string;
const deliveries: Delivery[] = [];
let startAdapter: () => Promise<ManagedProcess>;
/** The handlers' base URL. */
let url: string;

beforeAll(async () => {
  const stack = testStack();
  env = await createStepEnv('replay');
  view = {
    ...env,
    kube: createKubeAdapter({
      source: { kind: 'file', path: stack.kubeconfigPath },
      clock: env.clock,
      reporter: { controller: 'captf.io/test', instance: 'replay-view' },
    }),
  };
  workDir = mkdtempSync(join(tmpdir(), 'captf-replay-'));
  // Unshadowed: a dry run's reads would be counted as the event's.
  app = handlersOver(env, { step: { shadow: false } });
  // One /events request at a time, so the counter's difference over a request is that request's cost.
  let queue: Promise<void> = Promise.resolve();
  const release = new WeakMap<object, () => void>();
  app.addHook('preHandler', async (request, reply) => {
    if (request.url !== '/events') return;
    const about = JSON.parse(String(request.body)) as {
      namespace?: string;
      metadata?: { namespace?: string };
    };
    if ((about.namespace ?? about.metadata?.namespace) !== env.namespace)
      return reply.code(200).send({ handled: false });
    const turn = queue;
    let done = (): void => undefined;
    queue = new Promise((resolve) => {
      done = resolve;
    });
    release.set(request, done);
    await turn;
    env.kube.takeRequestCounts();
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.url !== '/events' || !release.has(request)) return payload;
    const requests = env.kube.takeRequestCounts();
    const body = JSON.parse(String(request.body)) as {
      kind: string;
      name?: string;
      metadata?: { name?: string };
    };
    const answer = JSON.parse(String(payload)) as { reason?: string; outcome?: { reason?: string } };
    deliveries.push({
      type: String(request.headers['ce-type']),
      kind: body.kind,
      name: body.name ?? body.metadata?.name ?? '',
      status: reply.statusCode,
      reason: answer.reason,
      requests,
    });
    release.get(request)?.();
    return payload;
  });
  url = await app.listen({ port: 0, host: '127.0.0.1' });

  const kubectl = kubectlFor(stack.kubectlPath, stack.kubeconfigPath);
  const shipped = readApiServerSource(join(repoRoot, 'infra', 'knative', 'apiserversource.yaml'));
  const { kubeconfig } = await prepareEventSourceIdentity({
    stack,
    kubectl,
    repoRoot,
    source: shipped,
    rbac: 'event-source.yaml',
    dir: workDir,
  });
  // This namespace only: without a namespaceSelector a source watches its own namespace.
  const { namespaceSelector: _all, ...spec } = shipped.spec;
  const source = { ...shipped, metadata: { ...shipped.metadata, namespace: env.namespace }, spec };
  startAdapter = () =>
    startApiServerSourceAdapter({
      name: 'apiserver-source',
      stack,
      source: shipped,
      sourceConfig: apiServerSourceConfig(source, [env.namespace]),
      sink: `${url}${shipped.spec.sink.uri}`,
      kubeconfig,
      logDir: workDir,
    });
  adapter = await startAdapter();
}, 120_000);

afterAll(async () => {
  await adapter?.kill();
  await app?.close();
  await env?.close();
  if (workDir && !process.env.CAPTF_KEEP_STACK) rmSync(workDir, { recursive: true, force: true });
});

/** Waits until no /events request has arrived for `quietMs`. */
async function quiet(quietMs: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen = deliveries.length;
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error(`events still arriving after ${timeoutMs} ms`);
    await sleep(200);
    if (deliveries.length !== seen) {
      seen = deliveries.length;
      since = Date.now();
    }
  }
}

/** Each machine's resourceVersion and number of Jobs. */
async function versionsOf(names: string[]) {
  return Promise.all(
    names.map(async (name) => {
      const ref = { kind: 'TerraformMachine' as const, namespace: env.namespace, name };
      const object = await view.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name);
      return {
        name,
        resourceVersion: object?.metadata.resourceVersion,
        jobs: (await jobsOf(view, ref)).length,
      };
    }),
  );
}

function print(label: string, rows: Delivery[]): void {
  for (const row of rows)
    console.log(
      `[event-costs] ${label} ${row.type.replace('dev.knative.apiserver.', '')} ${row.kind}/${row.name}: ${row.status} ${row.reason ?? 'stepped'}, ${row.requests.total} API requests ${JSON.stringify(row.requests.byRequest)}`,
    );
}

describe('events about objects the controller has seen, on the real sources', () => {
  it('its events alone take three machines through a finished apply; each echo of a step write costs no request', async () => {
    for (const name of MACHINES) await createObject(view, 'TerraformMachine', name);
    for (const name of MACHINES) {
      const ref = { kind: 'TerraformMachine' as const, namespace: env.namespace, name };
      const [job] = await eventually(
        () => jobsOf(view, ref),
        (jobs) => jobs.length > 0,
        60_000,
        `a Job of ${name} started by events`,
      );
      await finishJob(view, job?.metadata?.name ?? '', {
        exitCode: 0,
        result: result('apply', 'succeeded'),
      });
    }
    for (const name of MACHINES) {
      const ref = { kind: 'TerraformMachine' as const, namespace: env.namespace, name };
      await eventually(
        () => statusOf(view, ref),
        (status) => status.lastRun?.result === 'succeeded' && status.activeJob === undefined,
        60_000,
        `${name} bookkept by events`,
      );
    }
    await quiet(3000);
    print('life', deliveries);
    expect(deliveries.every((d) => d.status === 200 || d.status === 202)).toBe(true);
    // The step's own writes (finalizer, activeJob, bookkeeping) come back as update events about the
    // version the step left: each ends at Redis, no request, no step.
    const echoes = deliveries.filter((d) => d.kind === 'TerraformMachine' && d.reason === 'Duplicate');
    expect(echoes.length).toBeGreaterThanOrEqual(MACHINES.length);
    for (const echo of echoes) expect(echo.requests).toEqual({ total: 0, byRequest: {} });
    // A running Job's status changes and its pod's are answered from their copies.
    const quietOwned = deliveries.filter((d) => d.kind === 'Job' || d.kind === 'Pod').filter((d) => d.reason);
    expect(quietOwned.length).toBeGreaterThan(0);
    for (const delivery of quietOwned) expect(delivery.requests.total).toBe(0);
    const stepped = deliveries.filter((d) => d.kind === 'TerraformMachine' && d.reason === undefined);
    console.log(
      `[event-costs] TerraformMachine events: ${stepped.length} stepped, ${echoes.length} echoes of the step's own writes at no request; ${quietOwned.length} Job and pod events without a step`,
    );
  });

  it('a restarted adapter replays nothing for objects that exist (the sweep heals what it missed)', async () => {
    const first = deliveries.length;
    await adapter?.kill();
    adapter = await startAdapter();
    // The adapter watches again: a new object is delivered at once; the three that exist are not.
    await createObject(view, 'TerraformMachine', 'm-after');
    await eventually(
      async () => deliveries.slice(first).filter((d) => d.name === 'm-after').length,
      (count) => count > 0,
      60_000,
      'the add of m-after',
    );
    await quiet(3000);
    // Nothing about the machines, their Jobs or their pods (named after them).
    const replayed = deliveries
      .slice(first)
      .filter((d) => MACHINES.some((name) => d.name === name || d.name.includes(`-${name}-`)));
    print('after restart', deliveries.slice(first));
    expect(replayed).toEqual([]);
  });

  it('a restarted bundled relay sends an event for every object: none costs a request, nothing changes', async () => {
    await adapter?.kill();
    adapter = undefined;
    const objects = [...MACHINES, 'm-after'];
    const before = await versionsOf(objects);
    const first = deliveries.length;
    const stop = new AbortController();
    const relay = runRelayProcess(
      {
        CAPTF_HANDLER_URL: url,
        CAPTF_AUTH_DISABLED: 'true',
        REDIS_URL: testStack().redisUrl,
        KUBECONFIG: testStack().kubeconfigPath,
        CAPTF_KEY_PREFIX: env.keyPrefix,
        CAPTF_TICK_INTERVAL_MS: '0',
        LOG_LEVEL: 'silent',
      },
      stop.signal,
    );
    try {
      await eventually(
        async () => deliveries.slice(first).filter((d) => d.kind === 'TerraformMachine').length,
        (count) => count >= objects.length,
        60_000,
        "the relay's events about the machines",
      );
      await quiet(3000);
    } finally {
      stop.abort();
      await relay;
    }
    const replay = deliveries.slice(first);
    print('relay', replay);
    const machines = replay.filter((d) => d.kind === 'TerraformMachine');
    expect(machines.map((d) => d.name).sort()).toEqual([...objects].sort());
    for (const delivery of machines) {
      expect(delivery).toMatchObject({ status: 200, reason: 'Duplicate' });
      expect(delivery.requests).toEqual({ total: 0, byRequest: {} });
    }
    // Bookkept Jobs, m-after's running one and their pods: judged from their copies, no step.
    const owned = replay.filter((d) => d.kind === 'Job' || d.kind === 'Pod');
    expect(owned.length).toBeGreaterThan(0);
    for (const delivery of owned) {
      expect(delivery.status).toBe(200);
      expect(delivery.reason).toMatch(/^(JobBookkept|JobRunning|PodUneventful)$/);
      expect(delivery.requests.total).toBe(0);
    }
    expect(await versionsOf(objects)).toEqual(before);
  });
});
