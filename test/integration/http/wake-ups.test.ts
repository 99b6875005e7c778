import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRelayProcess } from '../../../functions/relay.ts';
import { createKubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { SCHEDULE_SHARDS } from '../../../src/adapters/redis/keys.ts';
import { refKey } from '../../../src/core/object-ref.ts';
import { VARIABLES_SECRET_LABELS } from '../../../src/core/variables-opt-in.ts';
import { secretSource } from '../../../src/core/wake.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createSecret,
  createStepEnv,
  eventually,
  finishJob,
  jobsOf,
  refOf,
  result,
  type StepEnv,
  statusOf,
} from '../step/harness.ts';
import { handlersOver } from './event-app.ts';

// Waits woken, not polled (DESIGN.md section 6, src/core/wake.ts), on the real API server, Redis and the
// bundled relay (resource mode, watching our objects and the Secrets waits depend on). Each object is taken
// into its wait by its own events, then left alone for a wait window while /tick runs: the handlers send
// no API request in it (the wait's requeue is the 10 min safety net, so nothing is due). Then the thing it
// waits for happens (a Secret created, a Secret labelled, another object's Job finishes and releases its
// Job slot), and the object starts its Job through that wake-up alone.

const WINDOW_TICKS = 8;
const TICK_GAP_MS = 250;
/** No event for this long: what led into a wait has been answered. */
const QUIET_MS = 2000;

let env: StepEnv;
/** A Kubernetes adapter of the test's own: its reads stay out of the handlers' count. */
let view: StepEnv;
let app: FastifyInstance;
let url: string;
const relay = new AbortController();
let relayDone: Promise<void>;
/** When the handlers last answered an event: the window starts once the sources are quiet. */
let lastEventAtMs = 0;

beforeAll(async () => {
  const stack = testStack();
  env = await createStepEnv('wake');
  view = {
    ...env,
    kube: createKubeAdapter({
      source: { kind: 'file', path: stack.kubeconfigPath },
      clock: env.clock,
      reporter: { controller: 'captf.io/test', instance: 'wake-view' },
    }),
  };
  // One Job slot for the installation: the second start waits for the first Job's release.
  app = handlersOver(env, {
    configEnv: { CAPTF_WATCH_NAMESPACES: env.namespace },
    step: { shadow: false, config: { maxActiveJobs: 1 } },
  });
  app.addHook('onResponse', async (request) => {
    if (request.url === '/events') lastEventAtMs = Date.now();
  });
  url = await app.listen({ port: 0, host: '127.0.0.1' });
  relayDone = runRelayProcess(
    {
      CAPTF_HANDLER_URL: url,
      CAPTF_AUTH_DISABLED: 'true',
      REDIS_URL: stack.redisUrl,
      KUBECONFIG: stack.kubeconfigPath,
      CAPTF_KEY_PREFIX: env.keyPrefix,
      CAPTF_WATCH_NAMESPACES: env.namespace,
      CAPTF_RELAY_MODE: 'resource',
      CAPTF_RELAY_WATCH: 'all',
      CAPTF_TICK_INTERVAL_MS: '0',
      HOSTNAME: 'relay-wake',
      LOG_LEVEL: 'silent',
    },
    relay.signal,
  );
}, 60_000);

afterAll(async () => {
  relay.abort();
  await relayDone;
  await app?.close();
  await env?.close();
});

async function tick(): Promise<void> {
  const response = await fetch(`${url}/tick`, { method: 'POST' });
  expect(response.status).toBe(200);
}

/** Ticks until `check` holds (the schedule is what runs woken objects). */
async function tickUntil<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  return eventually(
    async () => {
      await tick();
      return read();
    },
    check,
    60_000,
    what,
  );
}

/**
 * The handlers' API requests over a wait window of {@link WINDOW_TICKS} ticks, once the events of what led
 * into the wait (the step's own writes, another object's Job and pod) have all been answered: no event for
 * {@link QUIET_MS}. Total and by request.
 */
async function windowCost(): Promise<{ total: number; byRequest: Record<string, number> }> {
  await eventually(
    async () => {
      await tick();
      await sleep(TICK_GAP_MS);
      return Date.now() - lastEventAtMs;
    },
    (sinceLastEventMs) => sinceLastEventMs >= QUIET_MS,
    60_000,
    'the event sources quiet',
  );
  env.kube.takeRequestCounts();
  for (let i = 0; i < WINDOW_TICKS; i += 1) {
    await tick();
    await sleep(TICK_GAP_MS);
  }
  return env.kube.takeRequestCounts();
}

/** The object's requeue in the schedule, in seconds from now on the Redis server's clock. */
async function requeueInSeconds(member: string): Promise<number | undefined> {
  const client = env.redis.client;
  const [seconds] = await client.time();
  const nowMs = Number(seconds) * 1000;
  for (let shard = 0; shard < SCHEDULE_SHARDS; shard += 1) {
    const score = await client.zscore(env.redis.keys.scheduleShard(shard), member);
    if (score !== null) return (Number(score) - nowMs) / 1000;
  }
  return undefined;
}

describe('waits woken by what they wait for, not polled', () => {
  it('a missing variables Secret: created with the opt-in label, its event wakes the waiting machine', async () => {
    const ref = await createObject(view, 'TerraformMachine', 'w-missing', {
      variablesFrom: [{ name: 'size', secretKeyRef: { name: 'vars-late', key: 'size' } }],
    });
    await tickUntil(
      () => statusOf(view, ref),
      (status) => status.waitReason === 'WaitingForDependencies',
      'w-missing waits for its Secret',
    );
    const cost = await windowCost();
    expect(cost, 'API requests while waiting').toMatchObject({ total: 0 });
    expect(await requeueInSeconds(refKey(ref))).toBeGreaterThan(540);

    await createSecret(view, 'vars-late', { size: '"small"' }, { ...VARIABLES_SECRET_LABELS });
    const [job] = await tickUntil(
      () => jobsOf(view, ref),
      (jobs) => jobs.length === 1,
      'w-missing starts its Job once the Secret exists',
    );
    await finishJob(view, job?.metadata?.name ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded'),
    });
    await tickUntil(
      () => statusOf(view, ref),
      (status) => status.lastRun?.result === 'succeeded' && status.activeJob === undefined,
      'w-missing bookkept',
    );
  });

  it('an unlabelled Secret: labelled, its event wakes the waiting machine', async () => {
    await createSecret(view, 'vars-unlabelled', { size: '"small"' });
    const ref = await createObject(view, 'TerraformMachine', 'w-optin', {
      variablesFrom: [{ name: 'size', secretKeyRef: { name: 'vars-unlabelled', key: 'size' } }],
    });
    await tickUntil(
      () => statusOf(view, ref),
      (status) => status.waitReason === 'VariablesSecretNotOptedIn',
      'w-optin waits for the label',
    );
    const cost = await windowCost();
    expect(cost, `API requests while waiting: ${JSON.stringify(cost)}`).toMatchObject({ total: 0 });
    expect(await requeueInSeconds(refKey(ref))).toBeGreaterThan(540);

    await view.core.patchNamespacedSecret(
      {
        namespace: view.namespace,
        name: 'vars-unlabelled',
        body: { metadata: { labels: { ...VARIABLES_SECRET_LABELS } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const [job] = await tickUntil(
      () => jobsOf(view, ref),
      (jobs) => jobs.length === 1,
      'w-optin starts its Job once the Secret is labelled',
    );
    await finishJob(view, job?.metadata?.name ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded'),
    });
    await tickUntil(
      () => statusOf(view, ref),
      (status) => status.activeJob === undefined,
      'w-optin bookkept',
    );
  });

  it('a Job slot: the bookkeeping step that frees it wakes the waiting machine', async () => {
    const first = await createObject(view, 'TerraformMachine', 'w-slot-holder');
    const [held] = await tickUntil(
      () => jobsOf(view, first),
      (jobs) => jobs.length === 1,
      'the holder takes the one slot',
    );
    const ref = await createObject(view, 'TerraformMachine', 'w-slot');
    await tickUntil(
      () => statusOf(view, ref),
      (status) => status.waitReason === 'WaitingForJobSlot',
      'w-slot waits for a slot',
    );
    const cost = await windowCost();
    expect(cost, `API requests while waiting: ${JSON.stringify(cost)}`).toMatchObject({ total: 0 });
    expect(await requeueInSeconds(refKey(ref))).toBeGreaterThan(540);

    await finishJob(view, held?.metadata?.name ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded'),
    });
    await tickUntil(
      () => jobsOf(view, ref),
      (jobs) => jobs.length === 1,
      'w-slot starts its Job once the slot is released',
    );
  });

  it('a bootstrap data Secret (type cluster.x-k8s.io/secret, no label): its event reaches its waiters as a reference', async () => {
    const ref = refOf(view, 'TerraformMachine', 'w-bootstrap');
    // As a machine waiting for its bootstrap data registers (src/core/planner.ts), without Cluster API here.
    await env.redis.dependents.add(secretSource(env.namespace, 'boot-data'), ref, 3600);
    expect(await requeueInSeconds(refKey(ref))).toBeUndefined();
    await view.core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        metadata: { name: 'boot-data' },
        type: 'cluster.x-k8s.io/secret',
        stringData: { value: '#cloud-config', format: 'cloud-config' },
      },
    });
    const due = await eventually(
      () => requeueInSeconds(refKey(ref)),
      (seconds) => seconds !== undefined,
      30_000,
      'the waiter scheduled by the Secret event',
    );
    // Due now, as the handlers' clock reads it (a fraction of a second from the Redis server's).
    expect(due).toBeLessThan(5);
  });
});
