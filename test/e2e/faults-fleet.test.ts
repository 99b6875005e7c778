import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRedis, startRedis } from '../../src/local/redis-server.ts';
import { FAILPOINTS, type Failpoint } from '../../src/step/failpoints.ts';
import { testStack } from '../env/index.ts';
import { type ApiProxy, NO_API_FAULTS, startApiProxy } from './api-proxy.ts';
import { type FleetRun, startFleetRun } from './fleet.ts';
import { type E2eScope, machine, pinnedJobs, waitFor } from './harness.ts';
import { checkInvariants } from './invariants.ts';

// Issue 13 item 2: faults on the full stack with four handler processes behind a round-robin balancer, the
// relay and the timer, over real OpenTofu runs of two dozen machines (the sample machine image) in Job pods
// on a real node (kubelet, containerd, runc: src/local/real-node/). Each
// scenario strikes while runs are under way, then waits for everything to converge and checks the shared
// invariants (./invariants.ts): handlers killed at the step's failpoints (CAPTF_FAILPOINT_MODE=exit) and
// restarted by a supervisor; Redis killed, restarted, flushed and stalled past the command timeout; the
// API server answering 5xx, 429, nothing, and cutting watches (through ./api-proxy.ts); and event storms
// (duplicated, reordered, dropped, replayed) over hundreds of objects.

const MINUTE = 60_000;
const CANARY = 'tok-123-canary';
const HANDLERS = 4;
/** Machines that run to Ready in every scenario. */
const PLAIN = Array.from({ length: 20 }, (_, i) => `fm-${i + 1}`);
/** Machines whose every apply waits for approval: their plans are written (after-plan-write). */
const MANUAL = ['fm-manual-1', 'fm-manual-2'];
const ALL = [...PLAIN, ...MANUAL];
/** Paused machines the storm names too: hundreds of objects, no Job each. */
const PAUSED = Array.from({ length: 200 }, (_, i) => `fp-${i + 1}`);

/**
 * Scenario 1 arms each handler process with one failpoint at a time, the least hit so far and, among those,
 * the one fewest other handlers hold (a point not yet hit may be armed on several handlers, a point already
 * hit on no second one); the process dies the first time its point fires (chance 1/2 each time it is
 * reached, SELDOM points at once) and is restarted with the next one, until every point was hit and
 * DEATH_BUDGET deaths are spent. One point
 * per life bounds the deaths: each one stalls the dead process's steps until their 30 s step locks expire.
 * Three points are out of reach of a bounded run and left to test/integration/step: a Job deadline the
 * controller enforces itself comes only `deadline + 600 s + 60 s` after the Job starts
 * (`after-deadline-delete`), and a stuck Job (`after-stuck-delete`) needs its per-run Secret missing for a
 * minute, which the watching step re-creates first. The state's move label (`after-state-label`) is written
 * only for an object Cluster API owns, which the fleet's plain machines are not
 * (test/integration/step/block-move.test.ts dies there).
 */
const UNREACHABLE: Failpoint[] = ['after-deadline-delete', 'after-stuck-delete', 'after-state-label'];
const REACHABLE = FAILPOINTS.filter((p) => !UNREACHABLE.includes(p));
const DEATH_BUDGET = 2 * REACHABLE.length;
/**
 * Points a machine reaches once in its life, on its first steps: the finalizer patch and the providerID
 * patch after its first apply. Armed first, while the first applies run; later rounds cannot reach them.
 */
const FIRST_APPLY_ONLY: Failpoint[] = ['after-finalizer-patch', 'after-contract-spec-patch'];
/**
 * Points reached a few times in the whole run, each time on the handler the balancer happens to pick: the
 * first-apply-only ones, and the plan write, which only the MANUAL machines' plans reach (twice a round).
 * They fire at once: the plan write held by one handler at chance 1/2 was missed in every round of a CI run.
 * When fewer unhit points than handlers are left, each is armed on several handlers (any unhit point), so a
 * point the balancer spreads over the handlers is met in its round. The price: the handlers still holding a
 * point that was just hit keep it, and a step retried after its handler died there (the plan written, then
 * AlreadyExists) may kill one of them too; at most one death per handler, each a 30 s lock stall.
 */
const SELDOM: Failpoint[] = [...FIRST_APPLY_ONLY, 'after-plan-write'];

let workDir: string;
let redis: LocalRedis;
let proxy: ApiProxy;
let fleet: FleetRun;
/** Whether handlers are (re)started armed; the supervisor asks at every restart. */
let arming = false;
/** The point each handler slot is armed with now. */
const armedBy = new Map<number, Failpoint>();
/**
 * A point armed on every handler while unhit: a first-apply-only point the first applies did not reach on
 * the one handler holding it (the round-robin balancer and the fixed order of a run's events can send every
 * such step of a round past one handler; seen once in a full run).
 */
let armEverywhere: Failpoint | undefined;

const scope = (): E2eScope => ({
  namespace: fleet.namespace,
  nodeName: fleet.nodeName,
  kubectl: fleet.kubectl,
});

/** The environment of handler `index` at a (re)start: the next failpoint to die at, or none. */
function failpointEnv(index: number): Record<string, string> {
  armedBy.delete(index);
  const deaths = fleet?.deaths() ?? new Map<Failpoint, number>();
  const spent = [...deaths.values()].reduce((sum, n) => sum + n, 0);
  const allHit = REACHABLE.every((p) => deaths.has(p));
  if (!arming || (allHit && spent >= DEATH_BUDGET)) return {};
  if (armEverywhere !== undefined && !deaths.has(armEverywhere)) {
    armedBy.set(index, armEverywhere);
    return { CAPTF_FAILPOINTS: `${armEverywhere}@1`, CAPTF_FAILPOINT_MODE: 'exit' };
  }
  const holders = (p: Failpoint) => [...armedBy.values()].filter((q) => q === p).length;
  const early = (p: Failpoint) => (FIRST_APPLY_ONLY.includes(p) ? 0 : 1);
  const next = REACHABLE.filter((p) => !deaths.has(p) || holders(p) === 0).sort(
    (a, b) => (deaths.get(a) ?? 0) - (deaths.get(b) ?? 0) || holders(a) - holders(b) || early(a) - early(b),
  )[0];
  if (next === undefined) return {};
  armedBy.set(index, next);
  const chance = SELDOM.includes(next) ? 1 : 0.5;
  return { CAPTF_FAILPOINTS: `${next}@${chance}`, CAPTF_FAILPOINT_MODE: 'exit' };
}

/** The spec of machine `name` with `index` (changing it changes the inputs: a new apply). */
function machineOf(name: string, index: number): Record<string, unknown> {
  const object = machine(scope(), name, {
    variables: { index },
    variablesFrom: [{ name: 'size', secretKeyRef: { name: 'fault-canary', key: 'size' } }],
    jobs: {
      ...pinnedJobs(scope()),
      successfulJobsHistoryLimit: 1,
      failedJobsHistoryLimit: 1,
      activeDeadlineSeconds: 900,
      lockTimeoutSeconds: 30,
      // The real node schedules by its own capacity (two cores here): at the default 250m, only a handful
      // of the fleet's two dozen pods would fit at once.
      resources: { requests: { cpu: '10m', memory: '128Mi' } },
    },
    ...(MANUAL.includes(name) ? { applyPolicy: 'Manual' } : {}),
  });
  return object;
}

async function apply(objects: Record<string, unknown>[]): Promise<void> {
  await fleet.kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
  );
}

/** Sets `spec.variables.index` of machines (one merge patch each), starting a new apply of each. */
async function bump(names: string[], index: number): Promise<void> {
  await Promise.all(
    names.map((name) =>
      fleet.kubectl.run([
        'patch',
        'terraformmachine',
        name,
        '-n',
        fleet.namespace,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { variables: { name, index } } }),
      ]),
    ),
  );
}

interface Machine {
  metadata: { name: string; generation: number };
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string }[];
    activeJob?: unknown;
    waitReason?: string;
    lastRun?: { generation?: number; result: string };
  };
}

async function machines(): Promise<Machine[]> {
  return (
    JSON.parse(
      await fleet.kubectl.run(['get', 'terraformmachines', '-n', fleet.namespace, '-o', 'json']),
    ) as { items: Machine[] }
  ).items;
}

/** Converged: the current generation applied and Ready, or (Manual) its plan waiting for approval. */
function converged(m: Machine): boolean {
  const s = m.status;
  if (!s || s.activeJob !== undefined || s.observedGeneration !== m.metadata.generation) return false;
  if (MANUAL.includes(m.metadata.name)) return s.waitReason === 'AwaitingApproval';
  // Not lastRun.generation: the controller's own providerID patch moves the generation past the run's.
  // A step that saw this generation wrote observedGeneration, and Ready is True only for applied inputs.
  return s.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

async function waitConverged(what: string, timeoutMs: number, names: readonly string[] = ALL): Promise<void> {
  await waitFor(
    `${what}: every machine converged`,
    async () => (await machines()).filter((m) => names.includes(m.metadata.name) && !converged(m)),
    (left) => left.length === 0,
    timeoutMs,
    2000,
  );
}

/**
 * Steps, through the balancer, of the machines whose Job runs now, a few times while a round's Jobs run: the
 * run lease's renewal (`after-lease-renew`) comes only from a step that finds its Job running, and nothing
 * else brings one here: a Job runs seconds, its own events end in its bookkeeping, and its object's next
 * look is the 300 s JobActive fallback. A call that races another step or meets a dying handler changes
 * nothing.
 */
async function stepRunning(): Promise<void> {
  for (let pass = 0; pass < 4; pass += 1) {
    const running = (await machines()).filter(
      (m) => ALL.includes(m.metadata.name) && m.status?.activeJob !== undefined,
    );
    await Promise.all(
      running.map((m) =>
        fetch(`${fleet.url}/reconcile/TerraformMachine/${fleet.namespace}/${m.metadata.name}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${fleet.token}` },
        })
          .then((answer) => answer.body?.cancel())
          .catch(() => undefined),
      ),
    );
    await sleep(2000);
  }
}

/** The shared invariants, given a little time for requeues in flight; fails listing the violations. */
async function expectInvariants(what: string): Promise<void> {
  let last: string[] = [];
  try {
    await waitFor(
      `${what}: the invariants hold`,
      async () => {
        last = await checkInvariants({
          namespace: fleet.namespace,
          kubectl: fleet.kubectl,
          keyPrefix: fleet.keyPrefix,
          redisUrl: redis.url,
          handlerUrls: fleet.handlers.map((h) => h.url),
          logs: fleet.logs,
          canary: CANARY,
        });
        return last;
      },
      (violations) => violations.length === 0,
      45_000,
      3000,
    );
  } catch {
    expect(last, what).toEqual([]);
  }
}

/** Sends one Redis command to the controller's Redis from a short-lived client. */
async function redisCommand(...args: (string | number)[]): Promise<unknown> {
  const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    return await client.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    client.disconnect();
  }
}

beforeAll(async () => {
  const stack = testStack();
  workDir = mkdtempSync(join(tmpdir(), 'captf-faults-fleet-'));
  // The controller's own Redis, so killing and flushing it touches no other test's keys.
  redis = await startRedis({ workDir, name: 'fault-redis', args: ['--enable-debug-command', 'local'] });
  proxy = await startApiProxy({
    apiServerUrl: stack.apiServerUrl,
    caPath: stack.caPath,
    token: stack.adminToken,
    dir: workDir,
  });
  fleet = await startFleetRun({
    label: 'ffleet',
    handlers: HANDLERS,
    redisUrl: redis.url,
    kubeconfigPath: proxy.kubeconfigPath,
    handlerEnv: failpointEnv,
    // The sweep rebuilds a flushed schedule (DESIGN.md section 8): often, so the flush scenario stays short.
    syncPeriodSeconds: 10,
  });
  await fleet.kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'fault-canary',
        namespace: fleet.namespace,
        labels: { 'captf.io/variables': 'true' },
      },
      stringData: { size: CANARY },
    }),
  );
}, 3 * MINUTE);

afterAll(async () => {
  await fleet?.close();
  await proxy?.close();
  await redis?.stop();
  if (workDir && !process.env.CAPTF_KEEP_STACK) rmSync(workDir, { recursive: true, force: true });
}, 2 * MINUTE);

describe('faults on a fleet of handlers during real runs', () => {
  it(
    'handlers killed at every failpoint of the step, again and again, are restarted and the runs converge',
    async () => {
      arming = true;
      await fleet.restartHandlers();
      await apply(ALL.map((name) => machineOf(name, 1)));
      await stepRunning();
      await waitConverged('failpoints, first applies', 5 * MINUTE);
      // Each such point the first applies missed: armed on every handler, the first apply of a fresh
      // machine reaches it whichever handler takes that step.
      const missed = FIRST_APPLY_ONLY.filter((p) => !fleet.deaths().has(p));
      for (const point of missed) {
        console.log(`[faults-fleet] the first applies missed ${point}: armed on every handler`);
        armEverywhere = point;
        await fleet.restartHandlers();
        const late = `fm-late-${point.replace('after-', '')}`;
        await apply([machineOf(late, 1)]);
        await waitConverged(`failpoints, ${point} on every handler`, 5 * MINUTE, [late]);
      }
      armEverywhere = undefined;
      // The handlers that outlived it still hold it: the rounds begin with every handler armed afresh.
      if (missed.length > 0) await fleet.restartHandlers();
      // Second applies: bookkeeping prunes the first (history limit 1): after-prune-delete. More rounds
      // while points are left unhit, each starting with every handler re-armed: a handler that did not die
      // keeps its point, so a point no live handler holds would otherwise wait for a death to be armed.
      // Bounded in time too: a round takes about 40 s on two cores, four minutes at worst.
      const roundsUntil = Date.now() + 6 * MINUTE;
      for (
        let round = 0;
        round < 6 && Date.now() < roundsUntil && REACHABLE.some((p) => !fleet.deaths().has(p));
        round += 1
      ) {
        if (round > 0) await fleet.restartHandlers();
        const start = (round * 7) % PLAIN.length;
        await bump([...PLAIN.slice(start, start + 7), ...MANUAL], 2 + round);
        await stepRunning();
        await waitConverged(`failpoints, round ${round + 2}`, 4 * MINUTE);
      }
      arming = false;
      await fleet.restartHandlers();
      const deaths = fleet.deaths();
      console.log(
        `[faults-fleet] handler deaths by failpoint: ${JSON.stringify(Object.fromEntries(deaths))}; restarts ${fleet.handlers.map((h) => h.restarts)}`,
      );
      expect(REACHABLE.filter((p) => !deaths.has(p))).toEqual([]);
      await expectInvariants('after the failpoint kills');
    },
    14 * MINUTE,
  );

  it(
    'Redis killed, restarted empty, flushed and stalled past the command timeout mid-run: the runs converge',
    async () => {
      await bump(ALL, 10);
      // Mid-run: wait until some Jobs of this round exist.
      await waitFor(
        'runs of the Redis round under way',
        async () => (await machines()).filter((m) => m.status?.activeJob !== undefined).length,
        (active) => active >= 4,
        2 * MINUTE,
        250,
      );
      await redis.process.kill();
      await sleep(2000);
      redis = await startRedis({
        workDir,
        port: redis.port,
        name: 'fault-redis',
        args: ['--enable-debug-command', 'local'],
      });
      await sleep(3000);
      await redisCommand('FLUSHALL');
      // Past the controller's 1 s command timeout: its calls time out and answer "unknown", never "held".
      for (let i = 0; i < 3; i += 1) {
        await redisCommand('DEBUG', 'SLEEP', 2);
        await sleep(1000);
      }
      await redisCommand('CLIENT', 'PAUSE', 3000, 'ALL');
      await sleep(4000);
      await waitConverged('after the Redis faults', 5 * MINUTE);
      await expectInvariants('after the Redis faults');
    },
    8 * MINUTE,
  );

  it(
    'the API server answering 5xx, 429 and nothing, and cutting watches, mid-run: the runs converge',
    async () => {
      await bump(ALL, 11);
      proxy.setFaults({ unavailable: 0.04, throttled: 0.04, lostAnswer: 0.04, hang: 0.01 });
      const cutter = setInterval(() => proxy.cutWatches(), 4000);
      try {
        await waitFor(
          'half of the API-fault round applied',
          async () =>
            (await machines()).filter((m) => PLAIN.includes(m.metadata.name) && converged(m)).length,
          (done) => done >= PLAIN.length / 2,
          4 * MINUTE,
          2000,
        );
      } finally {
        clearInterval(cutter);
        proxy.setFaults(NO_API_FAULTS);
      }
      console.log(`[faults-fleet] API proxy: ${JSON.stringify(proxy.counts)}`);
      expect(proxy.counts.unavailable + proxy.counts.throttled).toBeGreaterThan(0);
      expect(proxy.counts.lostAnswer).toBeGreaterThan(0);
      expect(proxy.counts.watchesCut).toBeGreaterThan(0);
      await waitConverged('after the API faults', 4 * MINUTE);
      await expectInvariants('after the API faults');
    },
    9 * MINUTE,
  );

  it(
    'event storms (duplicated, reordered, dropped, replayed) over hundreds of objects change nothing but latency',
    async () => {
      await apply(
        PAUSED.map((name) => ({
          ...machineOf(name, 1),
          metadata: {
            name,
            namespace: fleet.namespace,
            annotations: { 'cluster.x-k8s.io/paused': 'true' },
          },
        })),
      );
      await bump(ALL, 12);
      const jobNames = (
        await fleet.kubectl.run([
          'get',
          'jobs',
          '-n',
          fleet.namespace,
          '-o',
          'jsonpath={.items[*].metadata.name}',
        ])
      )
        .split(' ')
        .filter(Boolean);
      const ref = (kind: string, apiVersion: string, name: string) => ({
        apiVersion,
        kind,
        name,
        namespace: fleet.namespace,
      });
      const types = ['add', 'update', 'delete'];
      const bodies = [
        ...[...ALL, ...PAUSED].map((n) =>
          ref('TerraformMachine', 'infrastructure.cluster.x-k8s.io/v1alpha1', n),
        ),
        // Replays of old Jobs' events: their runs are bookkept already and must not be again.
        ...jobNames.map((n) => ref('Job', 'batch/v1', n)),
      ];
      // Each event 1 to 3 times, shuffled, a quarter of them never sent; then the whole storm replayed.
      const storm = bodies.flatMap((body, i) =>
        i % 4 === 0
          ? []
          : Array.from({ length: 1 + (i % 3) }, (_, k) => ({ body, type: types[(i + k) % 3] })),
      );
      const shuffled = (list: typeof storm) =>
        list
          .map((e) => ({ e, key: Math.random() }))
          .sort((a, b) => a.key - b.key)
          .map(({ e }) => e);
      const statuses = new Map<number, number>();
      /** Connection-level failures by error code: a sender cannot know whether such a POST arrived. */
      const transport = new Map<string, number>();
      let sent = 0;
      const post = (e: (typeof storm)[number]) =>
        fetch(`${fleet.url}/events`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${fleet.token}`,
            'ce-specversion': '1.0',
            'ce-id': `storm-${sent}`,
            'ce-source': 'faults-fleet-storm',
            'ce-type': `dev.knative.apiserver.ref.${e.type}`,
          },
          body: JSON.stringify(e.body),
        });
      // As the relay's sender does (src/relay/retry.ts), a transport error is sent again: the POST may or
      // may not have arrived, one more ambiguous duplicate in a storm of them. At most three tries.
      const deliver = async (e: (typeof storm)[number]): Promise<number> => {
        for (let attempt = 1; ; attempt += 1) {
          try {
            const response = await post(e);
            await response.arrayBuffer();
            return response.status;
          } catch (error) {
            const cause = (error as { cause?: { code?: string } }).cause;
            const code = cause?.code ?? String(error);
            transport.set(code, (transport.get(code) ?? 0) + 1);
            if (attempt >= 3) throw error;
            await sleep(200 * attempt);
          }
        }
      };
      const send = async (list: typeof storm): Promise<void> => {
        const queue = [...list];
        await Promise.all(
          Array.from({ length: 12 }, async () => {
            for (let e = queue.shift(); e !== undefined; e = queue.shift()) {
              const status = await deliver(e);
              sent += 1;
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            }
          }),
        );
      };
      await send(shuffled(storm));
      await send(shuffled(storm));
      console.log(
        `[faults-fleet] storm: ${sent} events over ${bodies.length} objects; answers ${JSON.stringify(Object.fromEntries(statuses))}; transport errors sent again ${JSON.stringify(Object.fromEntries(transport))}`,
      );
      for (const status of statuses.keys()) expect([200, 202, 429, 503]).toContain(status);
      await waitConverged('after the storm', 4 * MINUTE);
      // Two hundred new objects wait their turn behind the storm on two cores; a step lost to it is the
      // sweep's (60 s) to bring back. So: every one of them Paused within three sweep periods, never run.
      await waitFor(
        'after the storm: every paused machine shows Paused',
        async () =>
          (await machines())
            .filter((m) => PAUSED.includes(m.metadata.name) && m.status?.waitReason !== 'Paused')
            .map((m) => m.metadata.name),
        (left) => left.length === 0,
        3 * MINUTE,
        2000,
      );
      const pausedJobs = (
        await fleet.kubectl.run([
          'get',
          'jobs',
          '-n',
          fleet.namespace,
          '-o',
          'jsonpath={.items[*].metadata.labels}',
        ])
      ).match(/"captf\.io\/owner-name":"fp-\d+"/g);
      expect(pausedJobs ?? []).toEqual([]);
      await expectInvariants('after the storm');
    },
    8 * MINUTE,
  );
});
