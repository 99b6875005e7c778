import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { createRedisFleetStore } from '../../../src/metrics/redis-fleet-store.ts';
import { createMetrics, type Metrics } from '../../../src/metrics/registry.ts';
import { type StepMetrics, stepMetricsOf } from '../../../src/step/step-metrics.ts';
import {
  createObject,
  createStepEnv,
  finishJob,
  patchAnnotations,
  patchSpec,
  podOf,
  result,
  type StepEnv,
  statusOf,
  stepUntil,
} from './harness.ts';

// DESIGN.md section 14 through the step: the real Redis fleet store and a fresh registry, read as
// Prometheus text the way `/metrics` serves it. Each transition counts once, however often the step runs.

let env: StepEnv;
let metrics: Metrics;
let stepMetrics: StepMetrics;
const storeErrors: unknown[] = [];

beforeAll(async () => {
  env = await createStepEnv('metrics');
  const fleet = createRedisFleetStore(env.redis.client, env.keyPrefix);
  metrics = createMetrics(fleet, (error) => storeErrors.push(error));
  stepMetrics = stepMetricsOf(metrics, fleet, (error) => storeErrors.push(error));
});

afterAll(async () => {
  await env?.close();
});

function step() {
  return env.step({ metrics: stepMetrics });
}

/** The value of one series in the registry's text, or undefined when the series is absent. */
async function sample(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',');
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return undefined;
}

function objectLabels(ref: ObjectRef): Record<string, string> {
  return { kind: ref.kind, namespace: ref.namespace, name: ref.name };
}

const LOCK_FAILURE = {
  kind: 'step' as const,
  step: 'plan' as const,
  summary: 'Error acquiring the state lock',
};

describe('step metrics', () => {
  it('a created and bookkept apply counts once: captf_jobs_total, last success, captf_jobs_active back to 0', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-metrics');
    expect(await step()(ref)).toMatchObject({ reason: 'FinalizerAdded' });
    // Redelivered events: two steps at once, then one more; one Job.
    const outcomes = await Promise.all([step()(ref), step()(ref)]);
    outcomes.push(await step()(ref));
    const created = outcomes.filter((outcome) => outcome.action === 'created');
    expect(created).toHaveLength(1);
    expect(await sample('captf_jobs_active')).toBe(1);
    expect(await sample('captf_jobs_total')).toBeUndefined();

    const before = Math.floor(Date.now() / 1000);
    await finishJob(env, created[0]?.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
    expect(await step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    for (let i = 0; i < 3; i += 1) expect((await step()(ref)).action).not.toBe('created');

    const apply = { kind: 'TerraformMachine', op: 'apply' };
    expect(await sample('captf_jobs_total', { ...apply, result: 'succeeded' })).toBe(1);
    expect(await sample('captf_jobs_active')).toBe(0);
    const lastSuccess = await sample('captf_last_success_timestamp_seconds', {
      ...objectLabels(ref),
      op: 'apply',
    });
    expect(lastSuccess).toBeGreaterThanOrEqual(before - 1);
    expect(lastSuccess).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(await sample('captf_job_duration_seconds_count', { ...apply, result: 'succeeded' })).toBe(1);
    expect(storeErrors).toEqual([]);
  });

  it('failures count by error kind and step; a stale lock handed to the next Job counts one force-unlock', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-metrics-lock');
    const first = await stepUntil(step(), ref, 'created');
    const killed = (await podOf(env, first.job ?? '')).metadata?.name ?? '';
    await finishJob(env, first.job ?? '', { exitCode: 137, reason: 'OOMKilled' });
    await step()(ref);
    let offset = 0;
    const later = (seconds: number) => {
      env.clock.advance(seconds);
      offset += seconds;
    };
    try {
      later(61);
      const second = await stepUntil(step(), ref, 'created');
      await finishJob(env, second.job ?? '', {
        exitCode: 1,
        result: result('apply', 'failed', {
          error: LOCK_FAILURE,
          lock: { id: 'lock-3', who: `runner@${killed}` },
        }),
      });
      await step()(ref);
      expect(await sample('captf_lock_force_unlocks_total')).toBe(0);

      later(121);
      await stepUntil(step(), ref, 'created');
      for (let i = 0; i < 2; i += 1) await step()(ref);
      expect(await sample('captf_lock_force_unlocks_total')).toBe(1);
    } finally {
      env.clock.advance(-offset);
    }
    const failed = { kind: 'TerraformMachine', op: 'apply', result: 'failed' };
    expect(await sample('captf_jobs_total', failed)).toBe(2);
    expect(await sample('captf_job_errors_total', { error_kind: 'unknown', step: '' })).toBe(1);
    expect(await sample('captf_job_errors_total', { error_kind: 'step', step: 'plan' })).toBe(1);
    expect(await sample('captf_jobs_active')).toBe(1);
    expect(storeErrors).toEqual([]);
  });

  it('per-object figures: schedules, the active Job, the run inputs and state sizes, pause and deletion', async () => {
    const ref = await createObject(env, 'TerraformCluster', 'c-metrics-figures', {
      driftCheck: { enabled: false },
      refresh: { interval: '1h' },
    });
    const labels = objectLabels(ref);
    const created = await stepUntil(step(), ref, 'created');
    expect(await sample('captf_schedule_enabled', { ...labels, op: 'drift' })).toBe(0);
    expect(await sample('captf_schedule_enabled', { ...labels, op: 'refresh' })).toBe(1);
    expect(await sample('captf_object_paused', labels)).toBe(0);
    const started = await sample('captf_active_job_start_timestamp_seconds', { ...labels, op: 'apply' });
    expect(started).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(await sample('captf_active_job_deadline_seconds', { ...labels, op: 'apply' })).toBe(3600);
    expect(await sample('captf_run_inputs_bytes', labels)).toBeGreaterThan(100);

    // The runner reports the size of the state Secret as its proxy last saw it (src/runner/kube-proxy.ts);
    // bookkeeping takes the figure from the report, reading no Secret.
    await finishJob(env, created.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded', { state: { bytes: 4000, moveLabel: false } }),
    });
    expect(await step()(ref)).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded' });
    expect(await sample('captf_state_bytes', labels)).toBe(4000);
    expect(
      await sample('captf_active_job_start_timestamp_seconds', { ...labels, op: 'apply' }),
    ).toBeUndefined();
    expect(await sample('captf_drift_detected', labels)).toBe(0);

    await patchAnnotations(env, ref, { 'cluster.x-k8s.io/paused': '' });
    await step()(ref);
    expect(await sample('captf_object_paused', labels)).toBe(1);

    await env.custom.deleteNamespacedCustomObject({
      ...CUSTOM_RESOURCES.TerraformCluster,
      namespace: env.namespace,
      name: ref.name,
    });
    await step()(ref);
    const deleting = await sample('captf_deletion_timestamp_seconds', labels);
    expect(deleting).toBeGreaterThan(Date.now() / 1000 - 600);

    // Unpaused, the destroy runs; once the finalizer is gone, so are the object's series.
    await patchAnnotations(env, ref, { 'cluster.x-k8s.io/paused': null });
    const destroy = await stepUntil(step(), ref, 'created');
    expect(await sample('captf_object_paused', labels)).toBe(0);
    await finishJob(env, destroy.job ?? '', { exitCode: 0, result: result('destroy', 'succeeded') });
    await step()(ref);
    for (const name of ['captf_object_paused', 'captf_deletion_timestamp_seconds', 'captf_state_bytes'])
      expect(await sample(name, labels), name).toBeUndefined();
    expect(storeErrors).toEqual([]);
  });

  it('a plan waiting for approval: captf_plan_pending_timestamp_seconds from its creation, gone once superseded', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-metrics-plan');
    const labels = objectLabels(ref);
    const created = await stepUntil(step(), ref, 'created');
    const job = created.job ?? '';
    await finishJob(env, job, {
      exitCode: 3,
      result: result('apply', 'blocked', {
        plan: { digest: `sha256:${'e'.repeat(64)}`, add: 0, change: 0, destroy: 1, destructive: true },
      }),
    });
    expect(await step()(ref)).toMatchObject({ reason: 'AwaitingApproval' });
    const plan = `${job}-plan`;
    // The step that made the plan did not read it: the run's end stands for its creation until the next.
    const fromRun = await sample('captf_plan_pending_timestamp_seconds', { ...labels, plan });
    const finishedAt = Date.parse((await statusOf(env, ref)).lastRun?.finishedAt ?? '') / 1000;
    expect(fromRun).toBe(Math.floor(finishedAt));
    await step()(ref);
    const read = await env.kube.reader.getCustomObject('TerraformPlan', ref.namespace, plan);
    const createdAt = Date.parse(read?.metadata.creationTimestamp ?? '') / 1000;
    expect(await sample('captf_plan_pending_timestamp_seconds', { ...labels, plan })).toBe(createdAt);
    expect(read?.spec).toMatchObject({ requestedBy: { generation: 1 } });

    // An input change supersedes the plan: the object no longer waits for it.
    await patchSpec(env, ref, { variables: { size: 'large' } });
    await step()(ref);
    expect(await sample('captf_plan_pending_timestamp_seconds', labels)).toBeUndefined();
  });
});
