// The cold start of one handler process (DESIGN.md section 1: instances scale to zero, so every new
// instance pays this): the import time and memory of @kubernetes/client-node against the whole app, and
// the RSS after building the app and serving its first event. Every sample is a fresh Node process
// (bench/lib/import-probe.ts); the figures are medians.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { printMachine } from './lib/machine.ts';
import { PROBE_TARGETS, type ProbeReport, type ProbeTarget } from './lib/probe-targets.ts';
import { printRatio, printTable } from './lib/table.ts';

const SAMPLES = 3;
const probeFile = join(import.meta.dirname, 'lib/import-probe.ts');
const MB = 1024 * 1024;

interface Sampled {
  report: ProbeReport;
  /** Spawn to exit of the probe process: Node's own start included. */
  processMs: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function sample(target: ProbeTarget): Sampled {
  const started = performance.now();
  const output = execFileSync(process.execPath, [probeFile, target], { encoding: 'utf8' });
  return { report: JSON.parse(output) as ProbeReport, processMs: performance.now() - started };
}

/** The median of one field over the samples; NaN when the target does not report it. */
function medianOf(samples: readonly Sampled[], pick: (s: Sampled) => number | undefined): number {
  return median(samples.map((s) => pick(s) ?? Number.NaN));
}

printMachine();
const targets = Object.keys(PROBE_TARGETS) as ProbeTarget[];
const results = new Map<ProbeTarget, Sampled[]>();
// Round-robin over the targets, so a burst of load on the machine spreads over all of them.
for (let round = 0; round < SAMPLES; round++) {
  for (const target of targets) results.set(target, [...(results.get(target) ?? []), sample(target)]);
}
const samplesOf = (target: ProbeTarget): Sampled[] => results.get(target) ?? [];

printTable(
  `one handler process, fresh per sample (median of ${SAMPLES})`,
  ['import target', 'import ms', 'import CPU ms', 'RSS MB', 'heap MB', 'process ms'],
  targets.map((target) => {
    const samples = samplesOf(target);
    return [
      target,
      medianOf(samples, (s) => s.report.importMs),
      medianOf(samples, (s) => s.report.importCpuMs),
      medianOf(samples, (s) => s.report.rssAfterImport) / MB,
      medianOf(samples, (s) => s.report.heapUsedAfterImport) / MB,
      medianOf(samples, (s) => s.processMs),
    ];
  }),
  [0, 0, 0, 1, 1, 0],
);
const built = samplesOf('whole app + buildApp + first event');
printTable(
  'after buildApp + ready and one binary ref event (app.inject)',
  ['measure', 'median'],
  [
    ['buildApp + ready, ms', medianOf(built, (s) => s.report.buildMs)],
    ['first event, ms', medianOf(built, (s) => s.report.firstEventMs)],
    ['RSS after first event, MB', medianOf(built, (s) => s.report.rssAfterFirstEvent) / MB],
    ['heap used after first event, MB', medianOf(built, (s) => s.report.heapUsedAfterFirstEvent) / MB],
  ],
  [0, 1],
);
process.stdout.write('\n');
const baseline = samplesOf('node only');
const clientNode = samplesOf('@kubernetes/client-node');
const whole = samplesOf('whole app (server, compose, adapters, step)');
const baseRss = medianOf(baseline, (s) => s.report.rssAfterImport);
printRatio(
  'client-node import / whole app import, wall',
  medianOf(clientNode, (s) => s.report.importMs) / medianOf(whole, (s) => s.report.importMs),
  'share of the app import time spent loading @kubernetes/client-node',
);
printRatio(
  'client-node import / whole app import, CPU',
  medianOf(clientNode, (s) => s.report.importCpuMs) / medianOf(whole, (s) => s.report.importCpuMs),
  'the same share in CPU time',
);
printRatio(
  'client-node RSS / whole app RSS, above bare node',
  (medianOf(clientNode, (s) => s.report.rssAfterImport) - baseRss) /
    (medianOf(whole, (s) => s.report.rssAfterImport) - baseRss),
  'share of the memory the imports add',
);
printRatio(
  'RSS after first event / bare node',
  medianOf(built, (s) => s.report.rssAfterFirstEvent) / baseRss,
  'a serving handler against an empty Node process',
);
