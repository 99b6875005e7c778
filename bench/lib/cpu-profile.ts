import type { Profiler, Runtime } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** V8's pseudo-frame of a thread waiting for work (the event loop polling). */
const IDLE = '(idle)';

/**
 * V8's sampling CPU profiler on this process (`node:inspector`), and a profile's self time summed by frame
 * and by area, for a bench that profiles a piece of its own work.
 */

/** One row of a summary: a frame or an area, its samples and their shares. */
export interface SelfTime {
  name: string;
  samples: number;
  /** Share of all the profile's samples, %. */
  percent: number;
  /** Share of the busy samples (all but `(idle)`), %; NaN for `(idle)` itself. */
  busyPercent: number;
  /**
   * The busy share of the main thread's CPU time per unit of work, ms (NaN for `(idle)`): samples are
   * taken on a wall-clock interval, so on a shared machine a frame's share, not its sampled time, is what
   * tells its CPU.
   */
  cpuMsPerUnit: number;
}

/** A profiler session on this process's main thread, sampling every `intervalUs` microseconds. */
export class CpuProfiler {
  readonly #session = new Session();

  /** Connects and enables the profiler; call once before `profile`. */
  async open(intervalUs: number): Promise<void> {
    this.#session.connect();
    await this.#session.post('Profiler.enable');
    await this.#session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  }

  /** Runs `work` under the profiler; returns its value and the profile of the whole run. */
  async profile<T>(work: () => Promise<T>): Promise<{ value: T; profile: Profiler.Profile }> {
    await this.#session.post('Profiler.start');
    try {
      const value = await work();
      const { profile } = await this.#session.post('Profiler.stop');
      return { value, profile };
    } catch (error) {
      await this.#session.post('Profiler.stop').catch(() => undefined);
      throw error;
    }
  }

  close(): void {
    this.#session.disconnect();
  }
}

/**
 * Where a frame's code lives: `file` is the path relative to `repoRoot`, or a node_modules package's name
 * with the file's base name (`zod/…/schemas.js`), or the `node:` module; `area` is our folder (`src/core`;
 * `src/adapters/kube`, one level deeper under src/adapters), the package, the Node module group
 * (`node:internal/streams`, `node:undici`), or the frame's own name for V8's pseudo-frames
 * (`(garbage collector)`, `(program)`, `(idle)`) and `(native)` for builtins without a script.
 */
export function locate(url: string, functionName: string, repoRoot: string): { file: string; area: string } {
  if (url === '') {
    if (functionName.startsWith('(')) return { file: '', area: functionName };
    return { file: 'native', area: '(native)' };
  }
  if (url.startsWith('node:')) {
    const path = url.slice('node:'.length).split('/');
    if (path[0] !== 'internal') return { file: url, area: `node:${path[0]}` };
    if (path[1] === 'deps') return { file: url, area: `node:${path[2] ?? 'deps'}` };
    return { file: url, area: `node:internal/${path[1] ?? ''}` };
  }
  const path = url.startsWith('file:') ? fileURLToPath(url) : url;
  const inModules = path.lastIndexOf(`${sep}node_modules${sep}`);
  if (inModules >= 0) {
    const parts = path.slice(inModules + `${sep}node_modules${sep}`.length).split(sep);
    const pkg = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? '');
    const base = parts[parts.length - 1] ?? '';
    const depth = pkg.startsWith('@') ? 3 : 2;
    return { file: parts.length > depth ? `${pkg}/…/${base}` : `${pkg}/${base}`, area: pkg };
  }
  const inRepo = relative(repoRoot, path);
  if (inRepo.startsWith('..')) return { file: path, area: path };
  const parts = inRepo.split(sep);
  const area =
    parts[0] === 'src' && parts.length > 2
      ? parts[1] === 'adapters' && parts.length > 3
        ? parts.slice(0, 3).join('/')
        : parts.slice(0, 2).join('/')
      : (parts[0] ?? inRepo);
  return { file: parts.join('/'), area };
}

/**
 * Who an area's code belongs to: ours (src/, functions/, the bench), a node_modules package, Node.js's own
 * JavaScript, V8 and native code (builtins, `(program)`, `(garbage collector)`), or the idle event loop.
 */
export function ownerOf(area: string): string {
  if (area === IDLE) return IDLE;
  if (area.startsWith('src/') || area === 'functions' || area === 'bench') return 'ours (src/)';
  if (area.startsWith('node:')) return 'Node.js (node:*)';
  if (area.startsWith('(')) return 'V8 and native';
  return 'node_modules';
}

/** `functionName (file:line)` of a frame, the line 1-based; `functionName (native)` for a builtin. */
function frameName(frame: Runtime.CallFrame, file: string): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (file === '') return name;
  return file === 'native' ? `${name} (native)` : `${name} (${file}:${frame.lineNumber + 1})`;
}

/**
 * Counts a profile's samples by frame (`functionName (file:line)`, the line 1-based; `functionName
 * (native)` for a builtin), by area (see `locate`) and by owner (`ownerOf`), largest first, self time
 * only; and our own frames by total time (`ownTotals`). `cpuMsPerUnit` is the main thread's CPU time per unit of work over the profiled
 * run, shared out by busy samples.
 */
export function selfTimes(
  profile: Profiler.Profile,
  repoRoot: string,
  cpuMsPerUnit: number,
): {
  frames: SelfTime[];
  areas: SelfTime[];
  owners: SelfTime[];
  own: SelfTime[];
  samples: number;
  busySamples: number;
} {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const samples = profile.samples ?? [];
  const frames = new Map<string, number>();
  const areas = new Map<string, number>();
  const owners = new Map<string, number>();
  const add = (into: Map<string, number>, key: string) => into.set(key, (into.get(key) ?? 0) + 1);
  for (const id of samples) {
    const frame = nodes.get(id)?.callFrame;
    if (frame === undefined) continue;
    const { file, area } = locate(frame.url, frame.functionName, repoRoot);
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    add(
      frames,
      file === ''
        ? name
        : file === 'native'
          ? `${name} (native)`
          : `${name} (${file}:${frame.lineNumber + 1})`,
    );
    add(areas, area);
    add(owners, ownerOf(area));
  }
  const busy = samples.length - (areas.get(IDLE) ?? 0);
  const rows = (from: Map<string, number>): SelfTime[] =>
    [...from]
      .map(([name, count]) => {
        const busyShare = name === IDLE || busy === 0 ? Number.NaN : count / busy;
        return {
          name,
          samples: count,
          percent: samples.length === 0 ? 0 : (count / samples.length) * 100,
          busyPercent: busyShare * 100,
          cpuMsPerUnit: busyShare * cpuMsPerUnit,
        };
      })
      .sort((a, b) => b.samples - a.samples);
  return {
    frames: rows(frames),
    areas: rows(areas),
    owners: rows(owners),
    own: rows(ownTotals(profile, repoRoot)),
    samples: samples.length,
    busySamples: busy,
  };
}

/**
 * Our own frames (under src/ or functions/) by total time: each sample counts once for every distinct
 * frame of ours on its stack, so a function's share includes what it calls synchronously (after an
 * `await`, V8's stack starts again at the resumed function: the time before is not its callers').
 */
function ownTotals(profile: Profiler.Profile, repoRoot: string): Map<string, number> {
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const ours = new Map<number, string | undefined>();
  for (const node of profile.nodes) {
    const { file, area } = locate(node.callFrame.url, node.callFrame.functionName, repoRoot);
    const own = area.startsWith('src/') || area === 'functions';
    ours.set(node.id, own ? frameName(node.callFrame, file) : undefined);
  }
  const totals = new Map<string, number>();
  for (const id of profile.samples ?? []) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const name = ours.get(at);
      if (name !== undefined && !seen.has(name)) {
        seen.add(name);
        totals.set(name, (totals.get(name) ?? 0) + 1);
      }
    }
  }
  return totals;
}
