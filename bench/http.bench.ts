// `POST /events` through the fastify app (`app.inject`, no socket) with in-memory ports and a step that
// answers a fixed outcome (bench/lib/app-deps.ts): what the HTTP layer itself costs per event (parsing the
// CloudEvent, zod checks, routing to the object, dedupe, the metrics and log lines). Then the memory of one
// app across 20k events: a handler that leaks would grow per event.
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../src/http/app.ts';
import { benchAppDeps } from './lib/app-deps.ts';
import { binaryRefEvent, malformedEvent, structuredResourceEvents } from './lib/events.ts';
import { type LatencySummary, measureConcurrentRate, measureLatency } from './lib/latency.ts';
import { printMachine } from './lib/machine.ts';
import { settledMemory } from './lib/memory.ts';
import { formatNumber, printRatio, printTable } from './lib/table.ts';

const CALLS = 1000;
/** Per round; three rounds, the median reported. */
const CONCURRENT_CALLS = 500;
const IN_FLIGHT = 32;
const MEMORY_EVENTS = 20_000;
const CHECKPOINT_EVENTS = 5000;
const WARMUP_EVENTS = 2000;
const OBJECT_BYTES = 20_000;

interface Case {
  name: string;
  request: (index: number) => InjectOptions;
  status: number;
  /** A property the answer must carry, checked once before timing. */
  answer: Record<string, unknown>;
  /** Sent once before the case, expecting 200. */
  prime?: InjectOptions;
}

const structured = structuredResourceEvents(OBJECT_BYTES);
const cases: Case[] = [
  {
    name: 'binary ref event (step runs)',
    request: binaryRefEvent,
    status: 200,
    answer: { handled: true },
  },
  {
    name: `structured resource event, ${OBJECT_BYTES / 1000} KB object (step runs)`,
    request: (index) => structured(index, `u-${index}`),
    status: 200,
    answer: { handled: true },
  },
  {
    name: 'duplicate resource event (dedupe hit)',
    request: () => structured(0, 'u-replayed'),
    status: 200,
    answer: { handled: false, reason: 'Duplicate' },
    // Delivered once just before, so its dedupe marker is the newest one the bounded dedupe keeps.
    prime: structured(0, 'u-replayed'),
  },
  {
    name: 'malformed event (400)',
    request: malformedEvent,
    status: 400,
    answer: { error: { code: 'invalid-event' } },
  },
];

async function send(app: FastifyInstance, request: InjectOptions, status: number): Promise<string> {
  const response = await app.inject(request);
  if (response.statusCode !== status) {
    throw new Error(
      `http bench: ${request.url} answered ${response.statusCode}, expected ${status}: ${response.body.slice(0, 200)}`,
    );
  }
  return response.body;
}

/** Fails when `body` lacks the expected fields (a bench of the wrong path measures nothing). */
function checkAnswer(body: string, expected: Record<string, unknown>, name: string): void {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    const actual = parsed[key];
    const matches =
      typeof value === 'object' && value !== null
        ? Object.entries(value).every(([k, v]) => (actual as Record<string, unknown> | undefined)?.[k] === v)
        : actual === value;
    if (!matches) throw new Error(`http bench: ${name}: answer ${body.slice(0, 200)} lacks ${key}`);
  }
}

printMachine();
// Memory first, in a process that has done nothing else: a fresh app, warmed up so lazy initialisation and
// compiled code are in "before", then 20k events cycling through the four cases.
const memoryApp = buildApp(benchAppDeps());
await memoryApp.ready();
const cycle = async (count: number, offset: number): Promise<void> => {
  for (let i = 0; i < count; i++) {
    const one = cases[i % cases.length];
    if (one === undefined) throw new Error('http bench: no case');
    await send(memoryApp, one.request(offset + i), one.status);
  }
};
await cycle(WARMUP_EVENTS, 1_000_000);
const readings = [{ events: 0, memory: settledMemory() }];
for (let sent = 0; sent < MEMORY_EVENTS; sent += CHECKPOINT_EVENTS) {
  await cycle(CHECKPOINT_EVENTS, 2_000_000 + sent);
  readings.push({ events: sent + CHECKPOINT_EVENTS, memory: settledMemory() });
}
await memoryApp.close();
const MB = 1024 * 1024;
printTable(
  `memory of one app across ${MEMORY_EVENTS} events after ${WARMUP_EVENTS} warm-up events (MB, after a full GC)`,
  ['events sent', 'rss', 'heapUsed', 'heapTotal', 'external'],
  readings.map(({ events, memory }) => [
    String(events),
    memory.rss / MB,
    memory.heapUsed / MB,
    memory.heapTotal / MB,
    memory.external / MB,
  ]),
  [0, 1, 1, 1, 1],
);
const first = readings[0];
const second = readings[1];
const last = readings[readings.length - 1];
if (!first || !second || !last) throw new Error('http bench: memory readings are missing');
const growthKbPer1k = (from: typeof first, key: 'rss' | 'heapUsed') =>
  (last.memory[key] - from.memory[key]) / 1024 / ((last.events - from.events) / 1000);
process.stdout.write(
  `growth per 1k events: rss ${formatNumber(growthKbPer1k(first, 'rss'), 1)} KB over all ${MEMORY_EVENTS}, ` +
    `${formatNumber(growthKbPer1k(second, 'rss'), 1)} KB after the first ${CHECKPOINT_EVENTS}; ` +
    `heapUsed ${formatNumber(growthKbPer1k(first, 'heapUsed'), 1)} KB (a leak grows heapUsed linearly)\n`,
);

const app = buildApp(benchAppDeps());
await app.ready();
const rows: { name: string; latency: LatencySummary; concurrent: number }[] = [];
for (const one of cases) {
  if (one.prime) await send(app, one.prime, 200);
  checkAnswer(await send(app, one.request(0), one.status), one.answer, one.name);
  const latency = await measureLatency(CALLS, (i) => send(app, one.request(i + 1), one.status));
  const concurrent = await measureConcurrentRate(CONCURRENT_CALLS, IN_FLIGHT, (i) =>
    send(app, one.request(CALLS * 2 + i), one.status),
  );
  rows.push({ name: one.name, latency, concurrent });
}
await app.close();
printTable(
  `POST /events via app.inject (latency one request at a time, throughput ${IN_FLIGHT} in flight)`,
  ['request', 'requests', 'p50 us', 'p99 us', 'req/s (1)', `req/s (${IN_FLIGHT})`],
  rows.map((row) => [
    row.name,
    row.latency.samples,
    row.latency.p50Us,
    row.latency.p99Us,
    row.latency.opsPerSecond,
    row.concurrent,
  ]),
);
process.stdout.write('\n');
const [ref, resource, duplicate, malformed] = rows;
if (!ref || !resource || !duplicate || !malformed) throw new Error('http bench: a row is missing');
printRatio(
  '20 KB resource event / ref event, p50',
  resource.latency.p50Us / ref.latency.p50Us,
  'cost of carrying the object',
);
printRatio(
  'duplicate / first delivery of a 20 KB event, p50',
  duplicate.latency.p50Us / resource.latency.p50Us,
  'a dedupe hit still parses the body; it saves the step',
);
printRatio(
  'malformed / ref event, p50',
  malformed.latency.p50Us / ref.latency.p50Us,
  'rejecting garbage against handling an event',
);
