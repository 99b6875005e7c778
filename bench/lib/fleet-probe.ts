import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../src/adapters/redis/client.ts';

/**
 * What the fleet bench reads off the running controller, from the outside, as an operator would: each
 * handler's `/metrics` (steps by action, Kubernetes requests by verb and resource, counted on the wire by the
 * adapter), the handler processes' CPU time (/proc/<pid>/stat), Redis's own command counters (INFO), and
 * the handlers' step log lines (every step outcome is logged at debug level).
 */

/** Summed counters of every handler at one moment. */
export interface HandlerCounters {
  /** `captf_reconcile_steps_total` by action. */
  steps: Record<string, number>;
  /** `captf_kube_requests_total` by `"<verb> <resource>"`. */
  requests: Record<string, number>;
  /** `captf_reconcile_step_kube_requests_total` by step action: what the steps of each kind sent. */
  stepRequests: Record<string, number>;
}

/** Kubernetes verbs that change something. */
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[match[1] ?? ''] = match[2] ?? '';
  return labels;
}

/** Parses the three counters out of Prometheus text. */
export function parseCounters(text: string): HandlerCounters {
  const counters: HandlerCounters = { steps: {}, requests: {}, stepRequests: {} };
  for (const line of text.split('\n')) {
    const match =
      /^(captf_reconcile_steps_total|captf_reconcile_step_kube_requests_total|captf_kube_requests_total)\{([^}]*)\} (\S+)$/.exec(
        line,
      );
    if (!match) continue;
    const labels = labelsOf(match[2] ?? '');
    const value = Number(match[3]);
    if (
      match[1] === 'captf_reconcile_steps_total' ||
      match[1] === 'captf_reconcile_step_kube_requests_total'
    ) {
      const into = match[1] === 'captf_reconcile_steps_total' ? counters.steps : counters.stepRequests;
      const action = labels.action ?? '';
      into[action] = (into[action] ?? 0) + value;
    } else {
      const key = `${labels.verb} ${labels.resource}`;
      counters.requests[key] = (counters.requests[key] ?? 0) + value;
    }
  }
  return counters;
}

/** Scrapes and sums the counters of every handler (`http://127.0.0.1:<port>` each). */
export async function scrapeHandlers(urls: readonly string[]): Promise<HandlerCounters> {
  const texts = await Promise.all(urls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  return sumCounters(texts.map(parseCounters));
}

function addInto(into: Record<string, number>, from: Record<string, number>, sign = 1): void {
  for (const [key, value] of Object.entries(from)) into[key] = (into[key] ?? 0) + sign * value;
}

/** The sum of several handlers' counters. */
export function sumCounters(all: readonly HandlerCounters[]): HandlerCounters {
  const sum: HandlerCounters = { steps: {}, requests: {}, stepRequests: {} };
  for (const counters of all) {
    addInto(sum.steps, counters.steps);
    addInto(sum.requests, counters.requests);
    addInto(sum.stepRequests, counters.stepRequests);
  }
  return sum;
}

/** `after - before`, dropping zeros. */
export function deltaCounters(before: HandlerCounters, after: HandlerCounters): HandlerCounters {
  const delta: HandlerCounters = { steps: {}, requests: {}, stepRequests: {} };
  addInto(delta.steps, after.steps);
  addInto(delta.steps, before.steps, -1);
  addInto(delta.requests, after.requests);
  addInto(delta.requests, before.requests, -1);
  addInto(delta.stepRequests, after.stepRequests);
  addInto(delta.stepRequests, before.stepRequests, -1);
  for (const map of [delta.steps, delta.requests, delta.stepRequests])
    for (const [key, value] of Object.entries(map)) if (value === 0) delete map[key];
  return delta;
}

/** Totals of a counter delta: steps, reads, writes, all requests. */
export function totals(counters: HandlerCounters): {
  steps: number;
  requests: number;
  reads: number;
  writes: number;
} {
  const steps = Object.values(counters.steps).reduce((a, b) => a + b, 0);
  let reads = 0;
  let writes = 0;
  for (const [key, value] of Object.entries(counters.requests)) {
    if (WRITE_VERBS.has(key.split(' ')[0] ?? '')) writes += value;
    else reads += value;
  }
  return { steps, requests: reads + writes, reads, writes };
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux the stack runs on). */
const USER_HZ = 100;

/** User plus system CPU time of processes, ms (/proc/<pid>/stat fields 14 and 15). */
export function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / USER_HZ;
}

/** Redis's counters at one moment. */
export interface RedisCounters {
  /** `total_commands_processed` (INFO stats): commands the server ran for clients. */
  commands: number;
  /** `cmdstat_*` calls by command (INFO commandstats), commands run inside scripts included. */
  byCommand: Record<string, number>;
  usedMemory: number;
}

/** Reads the counters; the two INFO calls themselves are taken off by {@link redisDelta}. */
export async function readRedis(client: RedisClient): Promise<RedisCounters> {
  const [stats, commandstats, memory] = [
    await client.info('stats'),
    await client.info('commandstats'),
    await client.info('memory'),
  ];
  const byCommand: Record<string, number> = {};
  for (const line of commandstats.split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match?.[1] !== undefined) byCommand[match[1].toLowerCase()] = Number(match[2]);
  }
  return {
    commands: Number(/^total_commands_processed:(\d+)/m.exec(stats)?.[1]),
    byCommand,
    usedMemory: Number(/^used_memory:(\d+)/m.exec(memory)?.[1]),
  };
}

/** Commands the bench sends itself (INFO, and MEMORY/SCAN for the memory figure): not the controller's. */
const OWN = new Set(['info', 'memory', 'scan', 'config']);

/** Commands run between two readings, without the bench's own. */
export function redisDelta(
  before: RedisCounters,
  after: RedisCounters,
): { commands: number; byCommand: Record<string, number> } {
  const byCommand: Record<string, number> = {};
  let own = 0;
  for (const [name, calls] of Object.entries(after.byCommand)) {
    const delta = calls - (before.byCommand[name] ?? 0);
    if (delta === 0) continue;
    if (OWN.has(name)) own += delta;
    else byCommand[name] = delta;
  }
  return { commands: after.commands - before.commands - own, byCommand };
}

/** One step outcome in a handler's log. */
export interface LoggedStep {
  atMs: number;
  kind: string;
  namespace: string;
  name: string;
  action: string;
  reason: string;
  /** The Kubernetes requests the step sent (its log line's `kubeRequests`); undefined on a line without it. */
  kubeRequests?: number;
  /** When it is looked at again, seconds (its log line's `requeueAfterSeconds`); undefined when never. */
  requeueAfterSeconds?: number;
}

/** Step outcomes in the handlers' logs (pino JSON lines, `msg: "step <action>: <reason>"`). */
export function loggedSteps(logPaths: readonly string[]): LoggedStep[] {
  const steps: LoggedStep[] = [];
  for (const path of logPaths) {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (!line.startsWith('{') || !line.includes('"msg":"step ')) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      steps.push({
        atMs: Date.parse(String(entry.time)),
        kind: String(entry.kind),
        namespace: String(entry.namespace),
        name: String(entry.name),
        action: String(entry.action),
        reason: String(entry.reason),
        ...(typeof entry.kubeRequests === 'number' ? { kubeRequests: entry.kubeRequests } : {}),
        ...(typeof entry.requeueAfterSeconds === 'number'
          ? { requeueAfterSeconds: entry.requeueAfterSeconds }
          : {}),
      });
    }
  }
  return steps.sort((a, b) => a.atMs - b.atMs);
}

/** The `q` quantile (0..1) of values, nearest rank; NaN for none. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
