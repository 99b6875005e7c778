import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisTopology } from '../../src/adapters/redis/topology.ts';
import { ANNOTATIONS } from '../../src/core/job-labels.ts';
import { startRedisCluster } from '../../src/local/redis-cluster.ts';
import { startRedisSentinel } from '../../src/local/redis-sentinel.ts';
import {
  applyObjects,
  conditionOf,
  type E2eRun,
  eventsOf,
  handlerAnswers,
  jobsOf,
  machine,
  RESOURCE,
  startE2eRun,
  waitFor,
  waitObject,
} from './harness.ts';

// Issue 12: a Redis failover during real runs, on a Redis Cluster (a master killed; its replica takes over)
// and under Sentinel (the master killed; the sentinels promote the replica). Knative's adapters are the
// event path. Machines are mid-apply when the master dies and more are created while it is gone. Then: no
// second Job for any object, every finished Job bookkept once, every answer during the failover 2xx or
// 503/429 with Retry-After (never 500), and everything converges. The failover time is measured from the
// kill until the promoted node serves the killed master's keys.

const MINUTE = 60_000;

/** What a scenario needs from its Redis topology. */
interface FailoverTarget {
  topology: RedisTopology;
  /** Kills the master serving `key` (SIGKILL); returns its port. */
  killMaster(key: string): Promise<number>;
  /** Resolves once a live node other than `killedPort` serves `key` as master. */
  promoted(key: string, killedPort: number): Promise<void>;
  stop(): Promise<void>;
}

const scenarios: { name: string; label: string; start: (workDir: string) => Promise<FailoverTarget> }[] = [
  {
    name: 'a Redis Cluster master',
    label: 'fo-cluster',
    start: async (workDir) => {
      const cluster = await startRedisCluster({ workDir });
      return {
        topology: cluster.topology,
        async killMaster(key) {
          const master = await cluster.masterOf(key);
          await master.server.process.kill();
          return master.port;
        },
        async promoted(key, killedPort) {
          for (;;) {
            const master = await cluster.masterOf(key).catch(() => undefined);
            if (master && master.port !== killedPort) {
              await cluster.waitUntilOk(30_000);
              return;
            }
            await sleep(100);
          }
        },
        stop: () => cluster.stop(),
      };
    },
  },
  {
    name: 'the Sentinel master',
    label: 'fo-sentinel',
    start: async (workDir) => {
      const sentinel = await startRedisSentinel({ workDir });
      return {
        topology: sentinel.topology,
        async killMaster() {
          const master = await sentinel.master();
          await master.server.process.kill();
          return master.port;
        },
        async promoted(_key, killedPort) {
          for (;;) {
            const master = await sentinel.master().catch(() => undefined);
            if (master && master.port !== killedPort) return;
            await sleep(100);
          }
        },
        stop: () => sentinel.stop(),
      };
    },
  },
];

/** One answer of the handlers to the test's own requests during the failover. */
interface Probe {
  route: string;
  /** The HTTP status; 0 when no answer came (the connection failed). */
  status: number;
  retryAfter: string | null;
  /** When the answer came, `performance.now()` ms. */
  atMs: number;
  /** The start of the body of an answer other than 2xx, or the transport error: why it was not 2xx. */
  detail?: string;
}

/** Sends /events (reference adds of `names`) and /tick every 200 ms until stopped. */
function probe(run: E2eRun, names: string[]): { probes: Probe[]; stop(): Promise<Probe[]> } {
  const probes: Probe[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const requests = [
        ...names.map((name) => ({
          route: '/events',
          init: {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'ce-specversion': '1.0',
              'ce-id': `probe-${Date.now()}-${name}`,
              'ce-source': 'failover-test',
              'ce-type': 'dev.knative.apiserver.ref.add',
            },
            body: JSON.stringify({
              apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
              kind: 'TerraformMachine',
              name,
              namespace: run.namespace,
            }),
          },
        })),
        {
          route: '/tick',
          init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' },
        },
      ];
      await Promise.all(
        requests.map(async ({ route, init }) => {
          try {
            const response = await fetch(`${run.controller.url}${route}`, init);
            const body = await response.text();
            probes.push({
              route,
              status: response.status,
              retryAfter: response.headers.get('retry-after'),
              atMs: performance.now(),
              ...(response.status < 300 ? {} : { detail: body.slice(0, 300) }),
            });
          } catch (error) {
            // Recorded, not thrown: a refused connection is an answer the assertions below reject.
            probes.push({
              route,
              status: 0,
              retryAfter: null,
              atMs: performance.now(),
              detail: String(error),
            });
          }
        }),
      );
      await sleep(200);
    }
  })();
  return {
    probes,
    async stop() {
      running = false;
      await loop;
      return probes;
    },
  };
}

describe.each(scenarios)('Redis failover during real runs: $name', ({ name, label, start }) => {
  let workDir: string;
  let target: FailoverTarget;
  let run: E2eRun;
  let prober: ReturnType<typeof probe> | undefined;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), `captf-${label}-`));
    target = await start(workDir);
    run = await startE2eRun(label, { events: 'knative', redis: target.topology });
  }, 3 * MINUTE);

  afterAll(async () => {
    // A failed wait leaves the probes running: stop them before the handlers go away.
    await prober?.stop();
    await run?.close();
    await target?.stop();
    if (workDir && !process.env.CAPTF_KEEP_STACK) rmSync(workDir, { recursive: true, force: true });
  }, MINUTE);

  it(
    'no second Job, every finished Job bookkept once, 503/429 with Retry-After (never 500), and all converges',
    async () => {
      const early = ['fo-1', 'fo-2', 'fo-3'];
      const late = ['fo-4', 'fo-5'];
      // Busy for 8 s inside the apply: the runs are under way when the master dies.
      await applyObjects(
        run,
        early.map((n, i) => machine(run, n, { variables: { sleep_seconds: 8, index: i + 1 } })),
      );
      for (const n of early)
        await waitFor(
          `a Job of ${n}`,
          () => jobsOf(run, n),
          (jobs) => jobs.length > 0,
          2 * MINUTE,
        );

      const active = probe(run, [...early, ...late]);
      prober = active;
      const slotsKey = `${run.keyPrefix}:{slots}:installation`;
      const killedAt = performance.now();
      const killedPort = await target.killMaster(slotsKey);
      await applyObjects(
        run,
        late.map((n, i) => machine(run, n, { variables: { index: i + 10 } })),
      );
      await target.promoted(slotsKey, killedPort);
      const promotedAt = performance.now();
      // Until a whole round of probes after the promotion is answered 2xx: the clients have found the new
      // master.
      const round = early.length + late.length + 1;
      await waitFor(
        'a round of 2xx answers after the promotion',
        // The last round only, so a timeout names what the handlers answered last and why.
        async () => active.probes.filter((p) => p.atMs > promotedAt).slice(-round),
        (last) => last.length >= round && last.every((p) => p.status >= 200 && p.status < 300),
        MINUTE,
        100,
      );
      const probes = await active.stop();
      const lastTransient = Math.max(
        killedAt,
        ...probes.filter((p) => p.status === 503 || p.status === 429).map((p) => p.atMs),
      );
      console.log(
        `[failover] ${name}: promoted ${((promotedAt - killedAt) / 1000).toFixed(1)} s after the kill; last 503/429 answer ${((lastTransient - killedAt) / 1000).toFixed(1)} s after it`,
      );

      for (const n of [...early, ...late])
        await waitObject(
          run,
          RESOURCE.TerraformMachine,
          n,
          `${n} Ready after the failover`,
          (o) => conditionOf(o, 'Ready')?.status === 'True' && o.status?.activeJob === undefined,
          3 * MINUTE,
        );

      // Answers: the test's own during the failover, and everything the adapters were answered all along.
      const transient = probes.filter((p) => p.status === 503 || p.status === 429);
      console.log(
        `[failover] ${name}: ${probes.length} probe answers, ${transient.length} of them 503/429, statuses ${JSON.stringify(
          Object.fromEntries(
            [...new Set(probes.map((p) => p.status))].map((s) => [
              s,
              probes.filter((p) => p.status === s).length,
            ]),
          ),
        )}`,
      );
      for (const p of probes) expect([200, 202, 429, 503]).toContain(p.status);
      for (const p of transient) expect(Number(p.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(transient.length).toBeGreaterThan(0);
      const logged = handlerAnswers(run);
      expect(logged.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);

      // One apply Job per machine, each finished and bookkept once.
      for (const n of [...early, ...late]) {
        const jobs = await jobsOf(run, n);
        expect(jobs, `${n}: ${jobs.join(', ')}`).toHaveLength(1);
        const [job] = jobs;
        const annotations = JSON.parse(
          await run.kubectl.run([
            'get',
            'job',
            job ?? '',
            '-n',
            run.namespace,
            '-o',
            'jsonpath={.metadata.annotations}',
          ]),
        ) as Record<string, string>;
        expect(annotations[ANNOTATIONS.bookkept]).toBeDefined();
        const recorded = (await eventsOf(run, n)).filter(
          (e) => e.reason === 'JobSucceeded' && e.message?.includes(job ?? '?'),
        );
        expect(recorded).toHaveLength(1);
        expect((recorded[0] as { count?: number }).count ?? 1).toBe(1);
      }
    },
    6 * MINUTE,
  );
});
