import { Redis } from 'ioredis';
import { KeyLayout, objectIdString, SCHEDULE_SHARDS } from '../../src/adapters/redis/keys.ts';
import { BLOCK_MOVE_ANNOTATION } from '../../src/core/block-move.ts';
import { ANNOTATIONS, LABELS } from '../../src/core/job-labels.ts';
import { runSecretName } from '../../src/core/names.ts';
import { RUN_EVENTS } from '../../src/core/record-run.ts';
import type { Kubectl } from '../../src/local/kubectl.ts';

/**
 * The invariants every fault scenario ends with (issue 13 item 2), checked against the live API server
 * and Redis, one checker for all scenarios. Each answer is a list of violations, empty when all hold:
 *
 * - at most one non-terminal Job per object, and one Job per (object, op, attempt);
 * - every finished Job bookkept, with the `captf.io/outcome` its own evidence allows and, for the object's
 *   newest run, the result `status.lastRun` shows; recorded exactly once (one run Event, count 1);
 * - no per-run Secret `captf-run-<job>` without its Job, or left behind by a bookkept one;
 * - every object with a running Job carries Cluster API's `clusterctl.cluster.x-k8s.io/block-move` (it is
 *   written before the Job is created, so no crash leaves a running Job without it: issue 23 item 6);
 * - no Redis run lease, cluster lease or Job slot held under a Job that is not running;
 * - every object Ready with no active Job, or holding a pending requeue in the Redis schedule;
 * - the canary absent from every status, Event, TerraformPlan, handler and relay log, /metrics answer and
 *   termination message.
 */

/** Where the checker looks. */
export interface InvariantScope {
  namespace: string;
  kubectl: Kubectl;
  keyPrefix: string;
  redisUrl: string;
  /** Base URLs of the live handlers, for /metrics. */
  handlerUrls: string[];
  /** Every log the handlers and the relay wrote so far. */
  logs: () => string;
  /** The secret value that must show nowhere. */
  canary: string;
}

interface Meta {
  name: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  ownerReferences?: { kind: string; name: string }[];
}

interface JobItem {
  metadata: Meta;
  status?: { conditions?: { type: string; status: string }[] };
}

interface TargetItem {
  kind: string;
  metadata: Meta;
  status?: {
    conditions?: { type: string; status: string }[];
    activeJob?: { name: string };
    lastRun?: { job: string; result: string };
  };
}

interface EventItem {
  reason: string;
  message?: string;
  note?: string;
  count?: number;
  series?: { count?: number };
}

/** Evidence of a run that succeeded: only a Job that completed may carry it. */
const SUCCESS_EVIDENCE = new Set(['succeeded', 'deadline-race']);
/**
 * Evidence of a plan that waits for approval: its Job completes (the runner exits 0 for it, DESIGN.md
 * section 10) or, from a runner of an earlier release, fails; it is neither a success nor a counted failure
 * (section 7).
 */
const BLOCKED_EVIDENCE = new Set(['destructive-blocked', 'awaiting-approval', 'plan-changed']);

/** The `lastRun.result` of each evidence, where the run is the object's newest. */
const RESULT_OF: Record<string, string> = {
  succeeded: 'succeeded',
  'deadline-race': 'succeeded',
  interrupted: 'interrupted',
  'destructive-blocked': 'blocked',
  'awaiting-approval': 'blocked',
  'plan-changed': 'blocked',
};

function finishedOf(job: JobItem): 'Complete' | 'Failed' | undefined {
  for (const c of job.status?.conditions ?? [])
    if (c.status === 'True' && (c.type === 'Complete' || c.type === 'Failed')) return c.type;
  return undefined;
}

async function getJson<T>(kubectl: Kubectl, args: string[]): Promise<T> {
  return JSON.parse(await kubectl.run([...args, '-o', 'json'])) as T;
}

/** The API objects the checks read, in one pass. */
interface World {
  targets: TargetItem[];
  jobs: JobItem[];
  secrets: Meta[];
  events: EventItem[];
  plans: unknown[];
  pods: unknown[];
}

async function readWorld(scope: InvariantScope): Promise<World> {
  const ns = ['-n', scope.namespace];
  const [targets, jobs, secrets, events, plans, pods] = await Promise.all([
    getJson<{ items: TargetItem[] }>(scope.kubectl, ['get', 'terraformmachines,terraformclusters', ...ns]),
    getJson<{ items: JobItem[] }>(scope.kubectl, ['get', 'jobs', ...ns]),
    getJson<{ items: { metadata: Meta }[] }>(scope.kubectl, ['get', 'secrets', ...ns]),
    getJson<{ items: EventItem[] }>(scope.kubectl, ['get', 'events', ...ns]),
    getJson<{ items: unknown[] }>(scope.kubectl, ['get', 'terraformplans', ...ns]),
    getJson<{ items: unknown[] }>(scope.kubectl, ['get', 'pods', ...ns]),
  ]);
  return {
    targets: targets.items,
    jobs: jobs.items,
    secrets: secrets.items.map((s) => s.metadata),
    events: events.items,
    plans: plans.items,
    pods: pods.items,
  };
}

/** The Job checks: non-terminal count, uniqueness, bookkeeping once with the right classification. */
function jobViolations(world: World): string[] {
  const violations: string[] = [];
  const byOwner = new Map<string, JobItem[]>();
  for (const job of world.jobs) {
    const owner = job.metadata.labels?.[LABELS.ownerUid];
    if (owner === undefined) continue;
    byOwner.set(owner, [...(byOwner.get(owner) ?? []), job]);
  }
  const lastRunOf = new Map<string, string>();
  for (const target of world.targets) {
    const last = target.status?.lastRun;
    if (last) lastRunOf.set(last.job, last.result);
  }
  for (const [owner, jobs] of byOwner) {
    const live = jobs.filter((j) => finishedOf(j) === undefined && !j.metadata.deletionTimestamp);
    if (live.length > 1)
      violations.push(`owner ${owner}: ${live.length} non-terminal Jobs ${live.map((j) => j.metadata.name)}`);
    const keys = jobs.map((j) => `${j.metadata.labels?.[LABELS.op]}/${j.metadata.labels?.[LABELS.attempt]}`);
    const duplicated = keys.filter((k, i) => keys.indexOf(k) !== i);
    if (duplicated.length > 0) violations.push(`owner ${owner}: several Jobs for op/attempt ${duplicated}`);
  }
  for (const job of world.jobs) {
    const name = job.metadata.name;
    const finished = finishedOf(job);
    const annotations = job.metadata.annotations ?? {};
    if (finished === undefined || job.metadata.deletionTimestamp) continue;
    if (annotations[ANNOTATIONS.bookkept] !== 'true') {
      violations.push(`Job ${name}: finished (${finished}) but not bookkept`);
      continue;
    }
    const outcome = annotations[ANNOTATIONS.outcome] ?? '(none)';
    const fits = BLOCKED_EVIDENCE.has(outcome) || (finished === 'Complete') === SUCCESS_EVIDENCE.has(outcome);
    if (!fits) violations.push(`Job ${name}: ${finished} but bookkept as ${outcome}`);
    const recorded = lastRunOf.get(name);
    if (recorded !== undefined && recorded !== (RESULT_OF[outcome] ?? 'failed'))
      violations.push(`Job ${name}: bookkept as ${outcome} but lastRun says ${recorded}`);
    const reason = RUN_EVENTS[outcome as keyof typeof RUN_EVENTS];
    const events = world.events.filter(
      (e) => e.reason === reason && `${e.message ?? ''}${e.note ?? ''}`.includes(name),
    );
    const count = events.reduce((sum, e) => sum + (e.series?.count ?? e.count ?? 1), 0);
    if (count !== 1) violations.push(`Job ${name}: ${count} ${reason} Events (want exactly 1)`);
  }
  const jobs = new Map(world.jobs.map((j) => [j.metadata.name, j]));
  for (const secret of world.secrets) {
    if (!secret.name.startsWith('captf-run-')) continue;
    const job = [...jobs.values()].find((j) => runSecretName(j.metadata.name) === secret.name);
    if (!job) violations.push(`Secret ${secret.name}: its Job is gone`);
    else if (job.metadata.annotations?.[ANNOTATIONS.bookkept] === 'true')
      violations.push(`Secret ${secret.name}: left behind by bookkept Job ${job.metadata.name}`);
  }
  return violations;
}

/** A Job is running when it exists, is not finished and is not being deleted. */
function runningJobs(world: World): Set<string> {
  return new Set(
    world.jobs
      .filter((j) => finishedOf(j) === undefined && !j.metadata.deletionTimestamp)
      .map((j) => j.metadata.name),
  );
}

/** Redis: leases and slots held only by running Jobs; each object Ready or scheduled. */
async function redisViolations(scope: InvariantScope, world: World): Promise<string[]> {
  const violations: string[] = [];
  const keys = new KeyLayout(scope.keyPrefix);
  const running = runningJobs(world);
  const redis = new Redis(scope.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const leaseKeys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${scope.keyPrefix}:*`, 'COUNT', '1000');
      cursor = next;
      // This namespace's leases only: an object's `…:run:<kind>/<ns>/<name>`, a cluster's `{capi:<ns>/…}:cluster`.
      leaseKeys.push(
        ...batch.filter(
          (k) =>
            (/:run:/.test(k) && k.includes(`/${scope.namespace}/`)) ||
            (/\}:cluster$/.test(k) && k.includes(`{capi:${scope.namespace}/`)),
        ),
      );
    } while (cursor !== '0');
    for (const key of leaseKeys) {
      const value = (await redis.get(key)) ?? '';
      const job = value.split(' ')[1] ?? value;
      if (!running.has(job)) violations.push(`lease ${key} held by ${value}: no such running Job`);
    }
    const slotMembers = await redis.zrange(keys.installationSlots(), '0', '-1');
    for (const member of slotMembers) {
      const [namespace, job] = member.split('/');
      if (namespace === scope.namespace && !running.has(job ?? ''))
        violations.push(`Job slot ${member}: no such running Job`);
    }
    for (const target of world.targets) {
      const ready =
        target.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true &&
        target.status?.activeJob === undefined;
      if (ready) continue;
      const member = objectIdString({
        kind: target.kind,
        namespace: scope.namespace,
        name: target.metadata.name,
      });
      let scheduled = false;
      for (let shard = 0; shard < SCHEDULE_SHARDS && !scheduled; shard += 1)
        scheduled = (await redis.zscore(keys.scheduleShard(shard), member)) !== null;
      if (!scheduled) violations.push(`${member}: not Ready and no pending requeue`);
    }
  } finally {
    redis.disconnect();
  }
  return violations;
}

/** The canary in anything the controller shows or keeps outside the per-run Secret and the state. */
async function canaryViolations(scope: InvariantScope, world: World): Promise<string[]> {
  const violations: string[] = [];
  const seen = (what: string, text: string): void => {
    if (text.includes(scope.canary)) violations.push(`the canary is in ${what}`);
  };
  for (const target of world.targets) seen(`the status of ${target.metadata.name}`, JSON.stringify(target));
  seen('an Event', JSON.stringify(world.events));
  seen('a TerraformPlan', JSON.stringify(world.plans));
  seen('a pod (termination messages)', JSON.stringify(world.pods));
  seen('the handler or relay logs', scope.logs());
  for (const url of scope.handlerUrls) {
    const metrics = await fetch(`${url}/metrics`)
      .then((r) => r.text())
      .catch(() => '');
    seen(`/metrics of ${url}`, metrics);
  }
  return violations;
}

/** Every invariant above, against the live world now. */
/** Every object with a running Job carries the block-move annotation (src/core/block-move.ts). */
function blockMoveViolations(world: World): string[] {
  const running = runningJobs(world);
  const violations: string[] = [];
  for (const job of world.jobs) {
    if (!running.has(job.metadata.name)) continue;
    const owner = world.targets.find((t) => t.metadata.uid === job.metadata.labels?.[LABELS.ownerUid]);
    if (owner && owner.metadata.annotations?.[BLOCK_MOVE_ANNOTATION] === undefined)
      violations.push(
        `${owner.kind} ${owner.metadata.name}: Job ${job.metadata.name} runs without block-move`,
      );
  }
  return violations;
}

export async function checkInvariants(scope: InvariantScope): Promise<string[]> {
  const world = await readWorld(scope);
  return [
    ...jobViolations(world),
    ...blockMoveViolations(world),
    ...(await redisViolations(scope, world)),
    ...(await canaryViolations(scope, world)),
  ];
}
