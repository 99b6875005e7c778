import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FleetMetricsReader } from './fleet.ts';

/**
 * The controller's metrics (DESIGN.md section 14; names as CAPTF's). Per-instance figures are plain
 * prom-client metrics that Prometheus sums across instances; fleet figures (`captf_jobs_total`,
 * `captf_jobs_active`, `captf_last_success_timestamp_seconds`) are read from the shared store at collect
 * time. One registry per app: no global default registry.
 */
export interface Metrics {
  registry: Registry;
  /** `captf_reconcile_steps_total{action}`: steps run by this instance. */
  stepsTotal: Counter<'action'>;
  /** `captf_reconcile_step_duration_seconds`: wall time of one step. */
  stepDuration: Histogram;
  /** `captf_job_duration_seconds{kind,op,result}`: from Job start to finish, observed at bookkeeping. */
  jobDuration: Histogram<'kind' | 'op' | 'result'>;
  /** `captf_job_errors_total{error_kind,step}`: failed Jobs by classified error kind and runner step. */
  jobErrors: Counter<'error_kind' | 'step'>;
  /** `captf_lease_waits_total{reason}`: steps that waited for a lease or slot (section 6 reasons). */
  leaseWaits: Counter<'reason'>;
  /** `captf_lock_force_unlocks_total`: stale state locks handed to a Job for force-unlock (section 12). */
  forceUnlocks: Counter;
}

/** Builds the metrics on a fresh registry; `onCollectError` hears a store outage (the series stay empty). */
export function createMetrics(fleet: FleetMetricsReader, onCollectError: (error: unknown) => void): Metrics {
  const registry = new Registry();
  const registers = [registry];
  new Counter({
    name: 'captf_jobs_total',
    help: 'Finished Jobs across the fleet, by object kind, op and result.',
    labelNames: ['kind', 'op', 'result'] as const,
    registers,
    async collect() {
      const rows = await fleet.jobTotals().catch((error: unknown) => {
        onCollectError(error);
        return undefined;
      });
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
      const active = await fleet.jobsActive().catch((error: unknown) => {
        onCollectError(error);
        return undefined;
      });
      if (active !== undefined) this.set(active);
    },
  });
  new Gauge({
    name: 'captf_last_success_timestamp_seconds',
    help: 'Unix time of the last successful op per object, across the fleet.',
    labelNames: ['kind', 'namespace', 'name', 'op'] as const,
    registers,
    async collect() {
      const rows = await fleet.lastSuccesses().catch((error: unknown) => {
        onCollectError(error);
        return undefined;
      });
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
  return {
    registry,
    stepsTotal: new Counter({
      name: 'captf_reconcile_steps_total',
      help: 'Reconcile steps run by this instance, by action.',
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
    jobErrors: new Counter({
      name: 'captf_job_errors_total',
      help: 'Failed Jobs by classified error kind and runner step.',
      labelNames: ['error_kind', 'step'] as const,
      registers,
    }),
    leaseWaits: new Counter({
      name: 'captf_lease_waits_total',
      help: 'Steps that waited for a lease or a Job slot, by wait reason.',
      labelNames: ['reason'] as const,
      registers,
    }),
    forceUnlocks: new Counter({
      name: 'captf_lock_force_unlocks_total',
      help: 'Stale state locks passed to a Job for force-unlock.',
      registers,
    }),
  };
}
