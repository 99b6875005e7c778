import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestCounts } from '../adapters/kube/request-count.ts';
import { CAPTF_VERSION } from '../version.ts';
import type { FleetMetricsReader, ObjectFigures, ObjectSize } from './fleet.ts';
import { type FleetSnapshot, fleetSnapshots } from './fleet-snapshot.ts';
import { LEASE_WAIT_REASONS } from './lease-waits.ts';

/**
 * The controller's metrics (DESIGN.md section 14; names as CAPTF's). Per-instance figures are plain
 * prom-client metrics that Prometheus sums across instances; fleet figures (`captf_jobs_total`,
 * `captf_jobs_active`, `captf_last_success_timestamp_seconds` and the per-object gauges the alerts join on)
 * are read from the shared store at collect time, as one snapshot (src/metrics/fleet-snapshot.ts). One
 * registry per app: no global default registry.
 */
export interface Metrics {
  registry: Registry;
  /** `captf_reconcile_steps_total{action}`: steps run by this instance. */
  stepsTotal: Counter<'action'>;
  /** `captf_reconcile_step_duration_seconds`: wall time of one step. */
  stepDuration: Histogram;
  /**
   * `captf_reconcile_step_kube_requests_total{action}`: the Kubernetes requests the steps of this instance
   * sent, by the step's action (what each kind of step costs the API server: divide by the step counter).
   */
  stepKubeRequests: Counter<'action'>;
  /** `captf_job_duration_seconds{kind,op,result}`: from Job start to finish, observed at bookkeeping. */
  jobDuration: Histogram<'kind' | 'op' | 'result'>;
  /** `captf_job_errors_total{error_kind,step}`: failed Jobs by classified error kind and runner step. */
  jobErrors: Counter<'error_kind' | 'step'>;
  /** `captf_lease_waits_total{reason}`: steps that waited for a lease or slot (section 6 reasons). */
  leaseWaits: Counter<'reason'>;
  /** `captf_lock_force_unlocks_total`: stale state locks handed to a Job for force-unlock (section 12). */
  forceUnlocks: Counter;
}

/** The per-object label names: fleet gauges carry the object (one series per object, never per Job). */
const OBJECT_LABELS = ['kind', 'namespace', 'name'] as const;
type ObjectLabels = Record<(typeof OBJECT_LABELS)[number], string>;

function objectLabels(row: { kind: string; namespace: string; name: string }): ObjectLabels {
  return { kind: row.kind, namespace: row.namespace, name: row.name };
}

/** How a registry reads the fleet and what it adds beyond the controller's own figures. */
export interface MetricsOptions {
  /**
   * Milliseconds a fleet snapshot answers scrapes (src/metrics/fleet-snapshot.ts); 0 (the default): every
   * scrape reads the store. The handlers set `CAPTF_METRICS_FLEET_MAX_AGE_SECONDS`.
   */
  fleetMaxAgeMs?: number;
  /** The clock of the fleet snapshot's age, ms since the epoch. */
  nowMs?: () => number;
  /**
   * prom-client's process and Node.js metrics (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`,
   * …). Off by default: they watch the process (GC, event loop delay), which one registry per process may
   * do, not the many registries a test makes.
   */
  processMetrics?: boolean;
}

/**
 * Builds the metrics on a fresh registry; `onCollectError` hears a store outage (each fleet series keeps
 * what it showed). `kubeRequests`, when given, is this instance's Kubernetes request tally (the adapter's,
 * counted on the wire), shown as `captf_kube_requests_total{verb,resource}`.
 */
export function createMetrics(
  fleet: FleetMetricsReader,
  onCollectError: (error: unknown) => void,
  kubeRequests?: () => RequestCounts,
  options: MetricsOptions = {},
): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics === true) collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'captf_build_info',
    help: 'Always 1; the labels say which release of the controller and which Node.js run this instance.',
    labelNames: ['version', 'node_version'] as const,
    registers,
  }).set({ version: CAPTF_VERSION, node_version: process.versions.node }, 1);
  if (kubeRequests !== undefined) {
    // Per instance, like the step counter: what this process asked of the API server (list pages, retries
    // and failed requests included), so a fleet's cost per step or per object can be read off `/metrics`.
    new Counter({
      name: 'captf_kube_requests_total',
      help: 'Kubernetes API requests sent by this instance, by verb and resource.',
      labelNames: ['verb', 'resource'] as const,
      registers,
      collect() {
        this.reset();
        for (const [label, count] of Object.entries(kubeRequests().byRequest)) {
          const [verb = '', resource = ''] = label.split(' ');
          this.inc({ verb, resource }, count);
        }
      },
    });
  }
  const snapshot = fleetSnapshots(fleet, onCollectError, {
    maxAgeMs: options.fleetMaxAgeMs ?? 0,
    nowMs: options.nowMs ?? Date.now,
  });
  /** One fleet figure of the snapshot; undefined while the store is down. */
  const fleetFigure =
    <T>(pick: (fleet: FleetSnapshot) => T) =>
    async (): Promise<T | undefined> => {
      const taken = await snapshot();
      return taken === undefined ? undefined : pick(taken);
    };
  const objects = fleetFigure((taken) => taken.objects);
  const sizes = fleetFigure((taken) => taken.sizes);
  const jobTotals = fleetFigure((taken) => taken.jobTotals);
  const jobsActive = fleetFigure((taken) => taken.jobsActive);
  const lastSuccesses = fleetFigure((taken) => taken.lastSuccesses);
  /** A gauge of one value per object (or per object and op/reason), rebuilt from the store every scrape. */
  const objectGauge = <L extends string>(
    name: string,
    help: string,
    extraLabels: readonly L[],
    fill: (gauge: Gauge<(typeof OBJECT_LABELS)[number] | L>, row: ObjectFigures) => void,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: [...OBJECT_LABELS, ...extraLabels],
      registers,
      async collect() {
        const rows = await objects();
        if (rows === undefined) return;
        this.reset();
        for (const row of rows) fill(this, row);
      },
    });
  const sizeGauge = (name: string, help: string, what: ObjectSize['what']) =>
    new Gauge({
      name,
      help,
      labelNames: OBJECT_LABELS,
      registers,
      async collect() {
        const rows = await sizes();
        if (rows === undefined) return;
        this.reset();
        for (const row of rows) if (row.what === what) this.set(objectLabels(row), row.bytes);
      },
    });
  objectGauge(
    'captf_object_paused',
    'Whether Cluster API pause holds the object (1) or not (0), across the fleet.',
    [],
    (gauge, row) => gauge.set(objectLabels(row), row.paused ? 1 : 0),
  );
  objectGauge(
    'captf_schedule_enabled',
    'Whether the object has drift checks or health refreshes scheduled (1) or not (0), by op.',
    ['op'],
    (gauge, row) => {
      gauge.set({ ...objectLabels(row), op: 'drift' }, row.schedules.drift ? 1 : 0);
      gauge.set({ ...objectLabels(row), op: 'refresh' }, row.schedules.refresh ? 1 : 0);
    },
  );
  objectGauge(
    'captf_deletion_timestamp_seconds',
    'Unix time the deletion of the object began; present only while it is being deleted.',
    [],
    (gauge, row) => {
      if (row.deletingSinceSeconds !== undefined) gauge.set(objectLabels(row), row.deletingSinceSeconds);
    },
  );
  objectGauge(
    'captf_drift_detected',
    'Whether the newest drift check of the object found drift (1) or not (0).',
    [],
    (gauge, row) => gauge.set(objectLabels(row), row.driftDetected ? 1 : 0),
  );
  objectGauge(
    'captf_object_waiting',
    'The object waits for the reason in `reason` (status.waitReason); absent when it does not wait.',
    ['reason'],
    (gauge, row) => {
      if (row.waitReason !== undefined) gauge.set({ ...objectLabels(row), reason: row.waitReason }, 1);
    },
  );
  objectGauge(
    'captf_active_job_start_timestamp_seconds',
    'Unix time the running Job of the object started (status.activeJob), by op.',
    ['op'],
    (gauge, row) => {
      if (row.activeJob !== undefined)
        gauge.set({ ...objectLabels(row), op: row.activeJob.op }, row.activeJob.startedAtSeconds);
    },
  );
  objectGauge(
    'captf_active_job_deadline_seconds',
    'activeDeadlineSeconds of the running Job of the object, by op.',
    ['op'],
    (gauge, row) => {
      if (row.activeJob?.deadlineSeconds !== undefined)
        gauge.set({ ...objectLabels(row), op: row.activeJob.op }, row.activeJob.deadlineSeconds);
    },
  );
  objectGauge(
    'captf_plan_pending_timestamp_seconds',
    'Unix time the TerraformPlan `plan` began to wait for approval (its creation); present only while the object waits AwaitingApproval.',
    ['plan'],
    (gauge, row) => {
      if (row.pendingPlan !== undefined)
        gauge.set({ ...objectLabels(row), plan: row.pendingPlan.plan }, row.pendingPlan.sinceSeconds);
    },
  );
  sizeGauge(
    'captf_state_bytes',
    "Size of the object's Terraform state Secret (kubernetes backend) after its newest successful run.",
    'state',
  );
  sizeGauge(
    'captf_run_inputs_bytes',
    "Size of the run config in the object's newest per-run Secret.",
    'inputs',
  );
  new Counter({
    name: 'captf_jobs_total',
    help: 'Finished Jobs across the fleet, by object kind, op and result.',
    labelNames: ['kind', 'op', 'result'] as const,
    registers,
    async collect() {
      const rows = await jobTotals();
      if (rows === undefined) return;
      this.reset();
      for (const row of rows) this.inc({ kind: row.kind, op: row.op, result: row.result }, row.count);
    },
  });
  new Gauge({
    name: 'captf_jobs_active',
    help: 'Jobs created and not yet bookkept, across the fleet.',
    registers,
    async collect() {
      const active = await jobsActive();
      if (active !== undefined) this.set(active);
    },
  });
  new Gauge({
    name: 'captf_last_success_timestamp_seconds',
    help: 'Unix time of the last successful op per object, across the fleet.',
    labelNames: ['kind', 'namespace', 'name', 'op'] as const,
    registers,
    async collect() {
      const rows = await lastSuccesses();
      if (rows === undefined) return;
      this.reset();
      for (const row of rows) {
        this.set(
          { kind: row.kind, namespace: row.namespace, name: row.name, op: row.op },
          row.timestampSeconds,
        );
      }
    },
  });
  const stepsTotal = new Counter({
    name: 'captf_reconcile_steps_total',
    help: 'Reconcile steps run by this instance, by action.',
    labelNames: ['action'] as const,
    registers,
  });
  const jobErrors = new Counter({
    name: 'captf_job_errors_total',
    help: 'Failed Jobs by classified error kind and runner step.',
    labelNames: ['error_kind', 'step'] as const,
    registers,
  });
  // The series the alerts take `increase`/`rate` of exist from the start at 0: a series that first appears
  // at 1 has no increase, so the first error of an instance would go unseen.
  const leaseWaits = new Counter({
    name: 'captf_lease_waits_total',
    help: 'Steps that waited for a lease or a Job slot, by wait reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  // The same for every lease wait: its rate is 0, not absent, until the first one (the dashboard's panel).
  for (const reason of LEASE_WAIT_REASONS) leaseWaits.inc({ reason }, 0);
  stepsTotal.inc({ action: 'error' }, 0);
  stepsTotal.inc({ action: 'unavailable' }, 0);
  jobErrors.inc({ error_kind: 'step', step: 'init' }, 0);
  jobErrors.inc({ error_kind: 'state-decryption', step: 'init' }, 0);
  return {
    registry,
    stepsTotal,
    stepKubeRequests: new Counter({
      name: 'captf_reconcile_step_kube_requests_total',
      help: 'Kubernetes API requests sent by the reconcile steps of this instance, by the step action.',
      labelNames: ['action'] as const,
      registers,
    }),
    stepDuration: new Histogram({
      name: 'captf_reconcile_step_duration_seconds',
      help: 'Wall time of one reconcile step.',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    jobDuration: new Histogram({
      name: 'captf_job_duration_seconds',
      help: 'Duration of finished Jobs from start to finish.',
      labelNames: ['kind', 'op', 'result'] as const,
      buckets: [30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 86400],
      registers,
    }),
    jobErrors,
    leaseWaits,
    forceUnlocks: new Counter({
      name: 'captf_lock_force_unlocks_total',
      help: 'Stale state locks passed to a Job for force-unlock.',
      registers,
    }),
  };
}
