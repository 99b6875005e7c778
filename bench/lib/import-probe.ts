// Child process of bench/cold-start.bench.ts: `node bench/lib/import-probe.ts <target>` imports one target
// into a fresh Node process, optionally builds the app and serves one event, and prints one JSON line of
// timings (ms) and memory (bytes). A fresh process per sample: a second import in the same process is
// answered from the module cache and measures nothing.
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { settledMemory } from './memory.ts';
import { PROBE_TARGETS, type ProbeReport, type ProbeTarget } from './probe-targets.ts';

function isTarget(name: string | undefined): name is ProbeTarget {
  return name !== undefined && Object.hasOwn(PROBE_TARGETS, name);
}

async function probe(target: ProbeTarget): Promise<ProbeReport> {
  const { modules, build } = PROBE_TARGETS[target];
  const cpuStarted = process.cpuUsage();
  const started = performance.now();
  for (const specifier of modules) await import(specifier);
  const importMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStarted);
  const imported = settledMemory();
  const report: ProbeReport = {
    importMs,
    importCpuMs: (cpu.user + cpu.system) / 1000,
    rssAfterImport: imported.rss,
    heapUsedAfterImport: imported.heapUsed,
  };
  if (!build) return report;
  // Loaded only here, so the other targets do not pay for the bench's own request builders.
  const { buildApp } = await import('../../src/http/app.ts');
  const { benchAppDeps } = await import('./app-deps.ts');
  const { binaryRefEvent } = await import('./events.ts');
  const buildStarted = performance.now();
  const app: FastifyInstance = buildApp(benchAppDeps());
  await app.ready();
  const eventStarted = performance.now();
  const response = await app.inject(binaryRefEvent(0));
  const firstEventMs = performance.now() - eventStarted;
  if (response.statusCode !== 200)
    throw new Error(`import probe: first event answered ${response.statusCode}`);
  await app.close();
  const served = settledMemory();
  return {
    ...report,
    buildMs: eventStarted - buildStarted,
    firstEventMs,
    rssAfterFirstEvent: served.rss,
    heapUsedAfterFirstEvent: served.heapUsed,
  };
}

const target = process.argv[2];
if (!isTarget(target)) throw new Error(`import probe: unknown target ${target ?? '(none)'}`);
process.stdout.write(`${JSON.stringify(await probe(target))}\n`);
