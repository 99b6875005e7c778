/**
 * What bench/cold-start.bench.ts asks bench/lib/import-probe.ts to load into a fresh process, and the line
 * the probe answers with. Module paths are relative to bench/lib.
 */

/** What a probe imports (and whether it then builds the app), by target name. */
export const PROBE_TARGETS = {
  'node only': { modules: [], build: false },
  '@kubernetes/client-node': { modules: ['@kubernetes/client-node'], build: false },
  'HTTP app (src/http/app.ts)': { modules: ['../../src/http/app.ts'], build: false },
  'whole app (server, compose, adapters, step)': {
    modules: ['../../functions/server.ts', '../../src/step/step.ts'],
    build: false,
  },
  'whole app + buildApp + first event': {
    modules: ['../../functions/server.ts', '../../src/step/step.ts'],
    build: true,
  },
} as const satisfies Record<string, { modules: readonly string[]; build: boolean }>;
export type ProbeTarget = keyof typeof PROBE_TARGETS;

/** The JSON line a probe prints. */
export interface ProbeReport {
  /** Wall time of the imports. */
  importMs: number;
  /** CPU time of the whole process during the imports (less moved by a loaded machine than wall time). */
  importCpuMs: number;
  rssAfterImport: number;
  heapUsedAfterImport: number;
  /** Only when the target builds: buildApp + ready, then one binary ref event through `app.inject`. */
  buildMs?: number;
  firstEventMs?: number;
  rssAfterFirstEvent?: number;
  heapUsedAfterFirstEvent?: number;
}
