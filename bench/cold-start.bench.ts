// The cold start of one handler instance (DESIGN.md section 1: instances scale to zero, so every new
// instance is paid by an event waiting in the queue), in one run, against the real local stack (etcd,
// kube-apiserver, Redis): process start to the first `POST /events` answered, and resident memory after
// 10,000 steps and the process's CPU per step over them (each a no-op step of a Ready object), for
// - the bundle (dist/controller/server.mjs, npm run build:bundles) as the controller image runs it (Node's
//   flags and the warm compile cache of images/tree.ts), and the bare bundle,
// - today's unbundled start (node functions/main.ts: type stripping, every module resolved from
//   node_modules),
// - a bare fastify process and a process that only imports @kubernetes/client-node (the floors), and the
//   libraries' floor: fastify, client-node and ioredis bundled and started as the image starts the
//   controller, answering after one GET of the object and one Redis command (bench/lib/libraries-floor.ts).
// Each sample is a fresh process, timed from spawn to the first 200 answer of a reference event for a Ready
// TerraformMachine, polled every 2 ms. The sample (infra/samples/local/demo.yaml) is taken to Ready first
// by the local run's controller, which then stops: every step after that is the steady-state step of a
// Ready object (read live state, nothing to do, requeue).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments } from 'yaml';
import { BUNDLES, bundleEntry, ensureBundlesBuilt } from '../functions/bundle.ts';
import { NODE_FLAGS, warmCompileCache } from '../images/tree.ts';
import { LOCAL_RUNNER_IMAGE, startLocalController } from '../src/local/local-controller.ts';
import { freePort } from '../src/local/ports.ts';
import { startLocalStack } from '../src/local/stack.ts';
import { prepareWorkloadNamespace } from '../src/local/workload-namespace.ts';
import { printMachine } from './lib/machine.ts';
import { formatNumber, printRatio, printTable } from './lib/table.ts';

const SAMPLES = 5;
const STEPS = 10_000;
const FIRST_EVENT_TIMEOUT_MS = 60_000;
const NAMESPACE = 'bench';
const OBJECTS = [
  { kind: 'TerraformCluster', name: 'demo' },
  { kind: 'TerraformMachine', name: 'm-a' },
  { kind: 'TerraformMachine', name: 'm-b' },
] as const;
/** The targets for the bundle. */
const TARGET_FIRST_EVENT_MS = 300;
const TARGET_RSS_MB = 100;
/** Issue 22: the handler's CPU per no-op step, the bundle with info logging. */
const TARGET_NOOP_CPU_MS = 2;

const root = join(import.meta.dirname, '..');
const token = randomBytes(24).toString('hex');
const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);

interface Target {
  name: string;
  args: string[];
  /** Runs the real handlers (needs Redis and the API server), or a floor that answers without work. */
  handlers: boolean;
  env?: Record<string, string>;
}

interface Started {
  child: ChildProcess;
  url: string;
  /** Spawn to the first 200 answer of `/events`, ms. */
  firstEventMs: number;
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/** CPU time a process has used so far, user + system, ms (/proc/<pid>/stat fields 14 and 15). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

/** Resident and peak resident memory of a process, MB (/proc/<pid>/status). */
function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

function refEvent(index: number, object: (typeof OBJECTS)[number]): RequestInit {
  return {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': `bench-${index}`,
      'ce-source': 'https://127.0.0.1',
      'ce-type': 'dev.knative.apiserver.ref.update',
    },
    body: JSON.stringify({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: object.kind,
      name: object.name,
      namespace: NAMESPACE,
    }),
  };
}

/** Spawns a target and times it to its first answered event; throws with its output if it never answers. */
async function start(target: Target, handlerEnv: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const started = performance.now();
  const child = spawn(process.execPath, target.args, {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      ...(target.handlers ? handlerEnv : {}),
      ...target.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const object = OBJECTS[1];
  for (;;) {
    const answer = await fetch(`${url}/events`, refEvent(0, object)).catch(() => undefined);
    if (answer?.status === 200) {
      const firstEventMs = performance.now() - started;
      await answer.text();
      return { child, url, firstEventMs };
    }
    await answer?.text();
    if (child.exitCode !== null || performance.now() - started > FIRST_EVENT_TIMEOUT_MS) {
      child.kill('SIGKILL');
      throw new Error(`${target.name}: no answered event (last ${answer?.status ?? 'refused'})\n${output}`);
    }
    await sleep(2);
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/**
 * `STEPS` steps through `POST /reconcile`, one worker per object (a second call for the same object would wait
 * on its lock). Not events: an event about a version a step has seen is answered Duplicate without a step.
 */
async function drive(url: string): Promise<{ answered: number; failed: number; ms: number }> {
  let next = 1;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    OBJECTS.map(async (object) => {
      while (next <= STEPS) {
        next += 1;
        const answer = await fetch(`${url}/reconcile/${object.kind}/${NAMESPACE}/${object.name}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        });
        const body = (await answer.json()) as { outcome?: { action?: string } };
        if (answer.status !== 200 || body.outcome?.action === undefined) failed += 1;
      }
    }),
  );
  return { answered: STEPS, failed, ms: performance.now() - started };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The sample in the bench namespace, on the setup node, with drift checks far beyond the bench's end. */
function sampleObjects(nodeName: string): Record<string, unknown>[] {
  const text = readFileSync(join(root, 'infra/samples/local/demo.yaml'), 'utf8');
  return parseAllDocuments(text).map((doc) => {
    const object = doc.toJS() as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
    object.metadata.namespace = NAMESPACE;
    object.spec.jobs = {
      ...(object.spec.jobs as object),
      nodeSelector: { 'kubernetes.io/hostname': nodeName },
    };
    object.spec.driftCheck = { interval: '12h', action: 'Report' };
    return object;
  });
}

printMachine();
await ensureBundlesBuilt(['server'], log);
const workDir = mkdtempSync(join(tmpdir(), 'captf-bench-cold-'));
const cacheDir = join(workDir, 'compile-cache');
const floorBundle = join(workDir, 'libraries-floor.mjs');
await bundleEntry('bench/lib/libraries-floor.ts', floorBundle, { root, minify: true });
warmCompileCache(process.execPath, NODE_FLAGS, [join(root, BUNDLES.server.outfile), floorBundle], cacheDir);
const stack = await startLocalStack({ log: () => undefined });
try {
  log('taking the sample to Ready with the local run (node, handlers, relay, timer)');
  const setup = await startLocalController({
    stack: stack.info,
    workDir,
    keyPrefix: 'bench',
    tickIntervalMs: 1000,
  });
  await prepareWorkloadNamespace(setup.kubectl, NAMESPACE, stack.info);
  await setup.kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: sampleObjects(setup.nodeName) }),
  );
  const deadline = Date.now() + 5 * 60_000;
  for (const object of OBJECTS) {
    for (;;) {
      const ready = await setup.kubectl.run([
        'get',
        object.kind.toLowerCase(),
        object.name,
        '-n',
        NAMESPACE,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      if (ready.trim() === 'True') break;
      if (Date.now() > deadline) throw new Error(`bench setup: ${object.name} not Ready after 5 minutes`);
      await sleep(1000);
    }
  }
  await setup.stop();

  const handlerEnv = {
    HOST: '127.0.0.1',
    CAPTF_AUTH_TOKEN: token,
    REDIS_URL: stack.info.redisUrl,
    KUBECONFIG: stack.info.kubeconfigPath,
    CAPTF_RUNNER_IMAGE: LOCAL_RUNNER_IMAGE,
    CAPTF_KEY_PREFIX: 'bench',
    LOG_LEVEL: 'info',
  };
  const targets: Target[] = [
    {
      name: 'bundle as in the image',
      args: [...NODE_FLAGS, BUNDLES.server.outfile],
      handlers: true,
      env: { NODE_COMPILE_CACHE: cacheDir },
    },
    { name: 'bundle', args: [BUNDLES.server.outfile], handlers: true },
    { name: 'unbundled (functions/main.ts)', args: ['functions/main.ts'], handlers: true },
    { name: 'bare fastify', args: ['bench/lib/bare-fastify.ts'], handlers: false },
    { name: 'client-node import only', args: ['bench/lib/client-node-only.ts'], handlers: false },
    {
      name: 'libraries floor as in the image',
      args: [...NODE_FLAGS, floorBundle],
      handlers: true,
      env: { NODE_COMPILE_CACHE: cacheDir },
    },
  ];

  log(`cold starts: ${SAMPLES} fresh processes per target, round robin`);
  const firstEvent = new Map<string, number[]>();
  const firstRss = new Map<string, number[]>();
  for (let round = 0; round < SAMPLES; round++) {
    for (const target of targets) {
      const started = await start(target, handlerEnv);
      firstEvent.set(target.name, [...(firstEvent.get(target.name) ?? []), started.firstEventMs]);
      firstRss.set(target.name, [...(firstRss.get(target.name) ?? []), memoryMb(started.child.pid ?? 0).rss]);
      await stop(started.child);
    }
  }

  log(`memory: ${formatNumber(STEPS)} steps per target (POST /reconcile)`);
  const after = new Map<
    string,
    { rss: number; peak: number; stepsPerSecond: number; cpuMsPerStep: number; failed: number }
  >();
  for (const target of targets) {
    const started = await start(target, handlerEnv);
    const pid = started.child.pid ?? 0;
    const cpuBefore = cpuMsOf(pid);
    const driven = await drive(started.url);
    const cpuMsPerStep = (cpuMsOf(pid) - cpuBefore) / STEPS;
    const memory = memoryMb(pid);
    after.set(target.name, {
      ...memory,
      stepsPerSecond: (STEPS / driven.ms) * 1000,
      cpuMsPerStep,
      failed: driven.failed,
    });
    await stop(started.child);
  }

  printTable(
    `one handler process, fresh per sample (median of ${SAMPLES}; ${formatNumber(STEPS)} steps for the memory)`,
    [
      'process',
      'first /events ms',
      'RSS at first MB',
      `RSS after ${STEPS / 1000}k MB`,
      'peak RSS MB',
      'steps/s',
      'CPU ms/step',
      'not stepped',
    ],
    targets.map((target) => {
      const memory = after.get(target.name);
      return [
        target.name,
        median(firstEvent.get(target.name) ?? []),
        median(firstRss.get(target.name) ?? []),
        memory?.rss ?? Number.NaN,
        memory?.peak ?? Number.NaN,
        memory?.stepsPerSecond ?? Number.NaN,
        memory?.cpuMsPerStep ?? Number.NaN,
        memory?.failed ?? Number.NaN,
      ];
    }),
    [0, 0, 0, 0, 0, 0, 2, 0],
  );
  // The machine is shared: the load at the end tells whether the wall times above are comparable.
  printMachine();
  const ms = (name: string) => median(firstEvent.get(name) ?? []);
  const rss = (name: string) => after.get(name)?.rss ?? Number.NaN;
  printRatio(
    'unbundled / bundle as in the image, first event',
    ms(targets[2]?.name ?? '') / ms(targets[0]?.name ?? ''),
    'how much sooner the image answers',
  );
  printRatio(
    'unbundled / bundle as in the image, RSS after steps',
    rss(targets[2]?.name ?? '') / rss(targets[0]?.name ?? ''),
    'memory saved by the bundle',
  );
  printRatio(
    'bundle / bundle as in the image, first event',
    ms(targets[1]?.name ?? '') / ms(targets[0]?.name ?? ''),
    'what the compile cache and --lite-mode save',
  );
  printRatio(
    'bundle as in the image / bare fastify, first event',
    ms(targets[0]?.name ?? '') / ms(targets[3]?.name ?? ''),
    'the handler against the framework floor',
  );
  printRatio(
    'libraries floor as in the image / bare fastify, first event',
    ms(targets[5]?.name ?? '') / ms(targets[3]?.name ?? ''),
    'what client-node, ioredis and one GET add to the framework',
  );
  printRatio(
    'bundle as in the image / libraries floor as in the image, first event',
    ms(targets[0]?.name ?? '') / ms(targets[5]?.name ?? ''),
    'what our own code adds to the libraries',
  );
  const image = targets[0]?.name ?? '';
  const cpu = (name: string) => after.get(name)?.cpuMsPerStep ?? Number.NaN;
  const floor = targets[5]?.name ?? '';
  process.stdout.write(
    `target first /events < ${TARGET_FIRST_EVENT_MS} ms: ${ms(image) < TARGET_FIRST_EVENT_MS ? 'met' : 'missed'} (${formatNumber(ms(image))} ms)\n` +
      `target RSS after ${formatNumber(STEPS)} steps < ${TARGET_RSS_MB} MB: ${rss(image) < TARGET_RSS_MB ? 'met' : 'missed'} (${formatNumber(rss(image))} MB)\n` +
      `target handler CPU per no-op step (info logging) < ${TARGET_NOOP_CPU_MS} ms: ${cpu(image) < TARGET_NOOP_CPU_MS ? 'met' : 'missed'} (${cpu(image).toFixed(2)} ms; the libraries floor ${cpu(floor).toFixed(2)} ms)\n`,
  );
} finally {
  await stack.stop();
  rmSync(workDir, { recursive: true, force: true });
}
