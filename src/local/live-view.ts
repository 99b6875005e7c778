import { setTimeout as sleep } from 'node:timers/promises';
import { type Timestamp, timestampMs } from '../core/views.ts';
import type { Kubectl } from './kubectl.ts';

/**
 * The main job's live view: one compact table of the objects of a namespace (Ready, op, reason, the last
 * run's steps, the Cluster API fields) and their Jobs, printed again only when something in it changed.
 * Read through `kubectl get -o json`, the same view a person has; no secret data is ever shown (status
 * and Job metadata only).
 */

/** The parts of one of our objects the view shows (status and Cluster API fields only). */
export interface ObjectView {
  kind: string;
  metadata: { name: string; deletionTimestamp?: string };
  spec?: {
    controlPlaneEndpoint?: { host?: string; port?: number };
    providerID?: string;
  };
  status?: {
    conditions?: { type: string; status: string; reason?: string }[];
    activeJob?: { name?: string; op?: string };
    lastRun?: {
      op?: string;
      result?: string;
      steps?: { name: string; exit: number; seconds: number }[];
      error?: { kind?: string; step?: string };
    };
    waitReason?: string;
    pendingPlanRef?: { name?: string };
    addresses?: { type: string; address: string }[];
  };
}

/**
 * The parts of a Job the view shows; times as kubectl's JSON gives them (strings) or as client-node's
 * models do (Dates), so `kubectl captf status` passes its Jobs as read.
 */
interface JobView {
  metadata: { name: string; labels?: Record<string, string>; creationTimestamp?: Timestamp };
  status?: {
    active?: number;
    conditions?: { type: string; status: string; reason?: string }[];
    startTime?: Timestamp;
    completionTime?: Timestamp;
  };
}

/** Our kinds in the order the table lists them. */
const KINDS = ['terraformclusters', 'terraformmachines', 'terraformmachinepools'] as const;

function readyOf(object: ObjectView): string {
  const ready = object.status?.conditions?.find((c) => c.type === 'Ready');
  return ready ? `${ready.status}` : '-';
}

/**
 * The reason of the Ready condition, or the wait reason when one is set (section 6: why nothing happens); a
 * deleting object's wait too (a destroy waiting for its lost state or a namespace being deleted says which).
 */
function reasonOf(object: ObjectView): string {
  const wait = object.status?.waitReason;
  if (object.metadata.deletionTimestamp) return wait ? `Deleting (${wait})` : 'Deleting';
  const ready = object.status?.conditions?.find((c) => c.type === 'Ready');
  return wait ?? ready?.reason ?? '-';
}

/** `init✓ plan✓ apply✗` from the last run's steps (exit 0 is a success except drift's 2, shown as ✓). */
function stepsOf(object: ObjectView): string {
  const run = object.status?.lastRun;
  if (!run?.steps?.length) return '-';
  const failedStep = run.error?.step;
  return run.steps
    .filter((step) => step.name !== 'prepare')
    .map((step) => `${step.name}${step.name === failedStep ? '✗' : '✓'}`)
    .join(' ');
}

/** The Cluster API fields the module filled (DESIGN.md section 2). */
function contractOf(object: ObjectView): string {
  const endpoint = object.spec?.controlPlaneEndpoint;
  if (endpoint?.host) return `endpoint ${endpoint.host}:${endpoint.port ?? ''}`;
  const parts: string[] = [];
  if (object.spec?.providerID) parts.push(object.spec.providerID);
  const addresses = object.status?.addresses?.map((a) => a.address).join(',');
  if (addresses) parts.push(addresses);
  return parts.join(' ') || '-';
}

function jobStateOf(job: JobView): string {
  const finished = job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  if (finished) return finished.type === 'Complete' ? 'Complete' : `Failed(${finished.reason ?? '?'})`;
  return job.status?.active ? 'Running' : 'Pending';
}

function secondsBetween(from: Timestamp | undefined, to: Timestamp | undefined): string {
  const fromMs = timestampMs(from);
  const toMs = timestampMs(to);
  if (fromMs === undefined || toMs === undefined) return '';
  return `${Math.round((toMs - fromMs) / 1000)}s`;
}

/** Pads each column to its widest cell. */
function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

/** Renders the objects and Jobs of one namespace as lines (pure: same input, same text). */
export function renderView(objects: readonly ObjectView[], jobs: readonly JobView[]): string[] {
  const objectRows = [
    ['OBJECT', 'READY', 'OP', 'REASON', 'LAST RUN', 'CLUSTER API'],
    ...objects.map((object) => [
      `${object.kind}/${object.metadata.name}`,
      readyOf(object),
      object.status?.activeJob?.op ? `${object.status.activeJob.op}…` : (object.status?.lastRun?.op ?? '-'),
      reasonOf(object) +
        (object.status?.pendingPlanRef?.name ? ` (plan ${object.status.pendingPlanRef.name})` : ''),
      stepsOf(object),
      contractOf(object),
    ]),
  ];
  const sortedJobs = [...jobs].sort(
    (a, b) =>
      (timestampMs(a.metadata.creationTimestamp) ?? 0) - (timestampMs(b.metadata.creationTimestamp) ?? 0),
  );
  const jobRows = [
    ['JOB', 'STATE', 'TOOK'],
    ...sortedJobs.map((job) => [
      job.metadata.name,
      jobStateOf(job),
      secondsBetween(job.status?.startTime, job.status?.completionTime),
    ]),
  ];
  return [...table(objectRows), '', ...table(jobRows)];
}

/** Terminal rows the lines take at `columns` wide (long lines wrap), so a redraw moves up far enough. */
function terminalRows(lines: readonly string[], columns: number | undefined): number {
  const width = columns && columns > 0 ? columns : Number.POSITIVE_INFINITY;
  return lines.reduce((rows, line) => rows + Math.max(1, Math.ceil([...line].length / width)), 0);
}

async function listJson<T>(kubectl: Kubectl, namespace: string, resource: string): Promise<T[]> {
  const text = await kubectl.run(['get', resource, '-n', namespace, '-o', 'json']);
  return (JSON.parse(text) as { items?: T[] }).items ?? [];
}

/** Options of {@link runLiveView}. */
export interface LiveViewOptions {
  kubectl: Kubectl;
  namespace: string;
  /** Where the view goes; each change prints a new block (redrawn in place on a terminal). */
  out: NodeJS.WriteStream;
  /** Poll interval, ms. */
  intervalMs?: number;
  signal: AbortSignal;
  /** Lines shown under the table for the objects read (e.g. "the sample is Ready"). */
  footer?: (objects: readonly ObjectView[]) => string[];
}

/**
 * Whether a kubectl call failed because its process got the signal that stops the local run (SIGINT from
 * Ctrl-C, SIGTERM), src/local/kubectl.ts `cause`; a kubectl killed otherwise (the OOM killer) is a failure.
 */
function stoppedBySignal(error: unknown): boolean {
  const signal = (error as { cause?: { signal?: unknown } } | undefined)?.cause?.signal;
  return signal === 'SIGINT' || signal === 'SIGTERM';
}

/** Polls and prints the view whenever it changed, until `signal` aborts. Read errors are shown, not thrown. */
export async function runLiveView(options: LiveViewOptions): Promise<void> {
  const { kubectl, namespace, out, signal } = options;
  let previous = '';
  let printedLines = 0;
  while (!signal.aborted) {
    // Undefined: nothing to show this time.
    let lines: string[] | undefined;
    try {
      const objects = (
        await Promise.all(KINDS.map((kind) => listJson<ObjectView>(kubectl, namespace, kind)))
      ).flat();
      const jobs = await listJson<JobView>(kubectl, namespace, 'jobs.batch');
      lines = [...renderView(objects, jobs), ...(options.footer?.(objects) ?? [])];
    } catch (error) {
      // Ctrl-C reaches the whole process group, so the kubectl of this poll may die of it before the stop
      // aborts the view: a stop, not a read failure to show.
      if (!signal.aborted && !stoppedBySignal(error))
        lines = [`(cannot read the namespace ${namespace}: ${(error as Error).message.split('\n')[0]})`];
    }
    const text = lines?.join('\n') ?? previous;
    if (lines !== undefined && text !== previous) {
      previous = text;
      const stamp = new Date().toISOString().slice(11, 19);
      const block = [`── ${stamp} namespace ${namespace} ──`, ...lines];
      // On a terminal the table is redrawn in place; in a file or pipe each change is a new block.
      if (out.isTTY && printedLines > 0) out.write(`\x1b[${printedLines}A\x1b[J`);
      out.write(`${block.join('\n')}\n`);
      printedLines = out.isTTY ? terminalRows(block, out.columns) : 0;
    }
    await sleep(options.intervalMs ?? 1000, undefined, { signal }).catch(() => undefined);
  }
}
