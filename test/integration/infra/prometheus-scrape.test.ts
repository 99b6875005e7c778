import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { productionStep } from '../../../functions/production-step.ts';
import { type RunningServer, runServer } from '../../../functions/server.ts';
import { freePort } from '../../../src/local/ports.ts';
import { testStack } from '../../env/index.ts';
import { parkedNode } from '../../env/parked-node.ts';
import { createStepEnv, eventually, finishJob, RUNNER_IMAGE, result, type StepEnv } from '../step/harness.ts';
import { findPrometheus, PROMETHEUS_RULE, ruleGroupsOf } from './prometheus.ts';

// DESIGN.md section 14 end to end: a real Prometheus, on the shipped scrape config
// (infra/monitoring/scrape-config.yaml: Kubernetes service discovery of the handlers' pods against the real
// API server), scrapes the running handlers' `/metrics` (the real step on the real API server and Redis)
// and evaluates the shipped rules. The rules load, evaluate without error, raise nothing for a healthy
// object; the per-object figures the alerts join on arrive as series with the object's own `namespace`;
// and every query of the shipped dashboard returns a series once a Job has run and an alert fired.

const root = join(import.meta.dirname, '..', '..', '..');
const DASHBOARD = join(root, 'infra/monitoring/dashboard.json');
const SCRAPE_CONFIG = join(root, 'infra/monitoring/scrape-config.yaml');
const GROUP = 'infrastructure.cluster.x-k8s.io';
const TOKEN = randomBytes(24).toString('hex');

let env: StepEnv;
/** The first apply Job of `scraped`, and of `big`. */
let scrapedJob: string;
let bigJob: string;
let namespace: string;
let server: RunningServer;
let prometheus: ChildProcess | undefined;
let prometheusUrl: string;
let dir: string;
let output = '';

interface PromRule {
  name: string;
  health: string;
  state: string;
  lastError?: string;
  lastEvaluation: string;
}

/** GETs a Prometheus API path and answers its `data`. */
async function api<T>(path: string): Promise<T> {
  const response = await fetch(`${prometheusUrl}${path}`);
  const body = (await response.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? response.status}`);
  return body.data;
}

/** Polls `probe` until it answers a value, for at most `ms`. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${what}: not within ${ms} ms (${String(last)}); prometheus said:\n${output.slice(-2000)}`);
}

/**
 * The value of an instant query with exactly one result, once Prometheus has it (and, with `accept`, once
 * the value passes: a scrape a second later may bring the step's newest write).
 */
async function single(query: string, accept: (value: number) => boolean = () => true): Promise<number> {
  return until(query, async () => {
    const data = await api<{ result: { value: [number, string] }[] }>(
      `/api/v1/query?query=${encodeURIComponent(query)}`,
    );
    const value = data.result.length === 1 ? Number(data.result[0]?.value[1]) : undefined;
    return value !== undefined && accept(value) ? value : undefined;
  });
}

let custom: CustomObjectsApi;

async function createCluster(name: string, spec: Record<string, unknown>): Promise<void> {
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'terraformclusters',
    body: {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'TerraformCluster',
      metadata: { name, namespace },
      spec: { source: { image: 'registry.example.com/modules/demo:1.0.0' }, ...spec },
    },
  });
}

/** Steps the object until it created its Job (the finalizer comes first); answers the Job's name. */
async function untilCreated(name: string): Promise<string> {
  const actions: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const { action, reason, job } = await reconcile(name);
    if (action === 'created' && job !== undefined) return job;
    actions.push(`${action}/${reason}`);
  }
  throw new Error(`${name}: no Job created (${actions.join(', ')})`);
}

async function reconcile(name: string): Promise<{ action: string; reason: string; job?: string }> {
  const response = await fetch(`${server.url}/reconcile/TerraformCluster/${namespace}/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { outcome: { action: string; reason: string; job?: string } }).outcome;
}

/**
 * The handlers' pod as Knative would make it, for service discovery: labelled with the Service's name, its
 * `captf` container's port named `user-port`. No kubelet runs it (it is bound to the parked node): its
 * status says it runs at 127.0.0.1, where the handlers listen.
 */
async function handlerPod(port: number): Promise<void> {
  const name = 'captf-00001-deployment-scrape';
  await env.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { 'serving.knative.dev/service': 'captf' } },
      spec: {
        nodeName: await parkedNode(env.core),
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'captf',
            image: 'captf-controller:test',
            ports: [{ name: 'user-port', containerPort: port }],
          },
        ],
      },
    },
  });
  const pod = await env.core.readNamespacedPod({ namespace, name });
  await env.core.replaceNamespacedPodStatus({
    namespace,
    name,
    body: { ...pod, status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] } },
  });
}

/**
 * The shipped scrape config, as a Prometheus outside the cluster runs it: service discovery reads the API
 * server through the stack's kubeconfig (in a cluster, Prometheus's ServiceAccount), in the test's namespace
 * (in a cluster, captf-system), at the test's pace.
 */
function shippedScrapeConfigs(): unknown[] {
  const configs = parse(readFileSync(SCRAPE_CONFIG, 'utf8')) as {
    kubernetes_sd_configs: Record<string, unknown>[];
  }[];
  return configs.map((config) => ({
    ...config,
    scrape_interval: '1s',
    kubernetes_sd_configs: config.kubernetes_sd_configs.map((sd) => ({
      ...sd,
      kubeconfig_file: testStack().kubeconfigPath,
      namespaces: { names: [namespace] },
    })),
  }));
}

beforeAll(async () => {
  const binary = findPrometheus();
  const stack = testStack();
  env = await createStepEnv('scrape');
  namespace = env.namespace;
  server = await runServer(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: stack.redisUrl,
      KUBECONFIG: stack.kubeconfigPath,
      CAPTF_AUTH_TOKEN: TOKEN,
      CAPTF_RUNNER_IMAGE: RUNNER_IMAGE,
      CAPTF_KEY_PREFIX: `scrape-${randomBytes(3).toString('hex')}`,
      // The test reads figures a second after a step; the shipped 60 s would only slow it down.
      CAPTF_METRICS_FLEET_MAX_AGE_SECONDS: '1',
      LOG_LEVEL: 'silent',
    },
    productionStep,
    { handleSignals: false },
  );
  custom = env.custom;
  await handlerPod(Number(new URL(server.url).port));
  await createCluster('scraped', { driftCheck: { enabled: false } });
  // The finalizer, then the first apply's Job: the step records the object's figures and its inputs size.
  scrapedJob = await untilCreated('scraped');

  dir = mkdtempSync(join(tmpdir(), 'captf-prometheus-'));
  writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: ruleGroupsOf(PROMETHEUS_RULE) }));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [join(dir, 'rules.yaml')],
      scrape_configs: shippedScrapeConfigs(),
    }),
  );
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    binary,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  prometheus.stdout?.on('data', keep);
  prometheus.stderr?.on('data', keep);
  await until('prometheus ready', async () =>
    (await fetch(`${prometheusUrl}/-/ready`)).ok ? true : undefined,
  );
}, 120_000);

afterAll(async () => {
  if (prometheus?.pid !== undefined && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus?.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await server?.stop();
  await env?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("Prometheus finds the handlers' pod with the shipped scrape config, scrapes /metrics, loads the shipped rules and evaluates them: healthy, nothing pending or firing", async () => {
  const target = await until('the scrape target up', async () => {
    const data = await api<{
      activeTargets: {
        health: string;
        lastError: string;
        labels: Record<string, string>;
        scrapeUrl: string;
      }[];
    }>('/api/v1/targets');
    return data.activeTargets[0]?.health === 'up' ? data.activeTargets[0] : undefined;
  });
  expect(target.lastError).toBe('');
  // Found by discovery, not configured: the pod's name and namespace are the target's labels.
  expect(target.labels).toMatchObject({ job: 'captf', namespace, pod: 'captf-00001-deployment-scrape' });
  expect(target.scrapeUrl).toBe(`${server.url}/metrics`);

  // Evaluated at least once after the first scrape: every rule has a last evaluation.
  const rules = await until('every rule evaluated', async () => {
    const data = await api<{ groups: { rules: PromRule[] }[] }>('/api/v1/rules?type=alert');
    const all = data.groups.flatMap((group) => group.rules);
    return all.length > 0 && all.every((rule) => !rule.lastEvaluation.startsWith('0001')) ? all : undefined;
  });
  const shipped = ruleGroupsOf(PROMETHEUS_RULE).flatMap((group) => group.rules);
  expect(rules.map((rule) => rule.name).sort()).toEqual(
    shipped.flatMap((rule) => (rule.alert ? [rule.alert] : [])).sort(),
  );
  for (const rule of rules) {
    expect(rule.lastError ?? '', rule.name).toBe('');
    expect(rule.health, rule.name).toBe('ok');
    expect(rule.state, rule.name).toBe('inactive');
  }
  const alerts = await api<{ alerts: unknown[] }>('/api/v1/alerts');
  expect(alerts.alerts).toEqual([]);
  // The setting CAPTFPlanAwaitingApproval compares against (docs/runbooks/plan-awaiting-approval.md).
  const records = await api<{ groups: { rules: PromRule[] }[] }>('/api/v1/rules?type=record');
  const setting = records.groups.flatMap((group) => group.rules);
  expect(setting.map((rule) => [rule.name, rule.health])).toEqual([
    ['captf:plan_approval_alert_after_seconds', 'ok'],
  ]);
});

it('the per-object figures the alerts join on arrive from the running step', async () => {
  const object = `kind="TerraformCluster",namespace="${namespace}",name="scraped"`;
  expect(await single(`captf_object_paused{${object}}`)).toBe(0);
  expect(await single(`captf_schedule_enabled{${object},op="drift"}`)).toBe(0);
  expect(await single(`captf_active_job_deadline_seconds{${object},op="apply"}`)).toBe(3600);
  expect(await single(`captf_run_inputs_bytes{${object}}`)).toBeGreaterThan(100);
  // The exporter's own counters, initialised at 0 so the first error is an increase.
  expect(await single('captf_reconcile_steps_total{action="error"}')).toBe(0);
  // What the steps cost the API server, by the step's action: the Job-creating step reads and writes
  // (the object, its Jobs, the block-move patch, the Job, the per-run Secret, the status, the Event).
  const created = await single('captf_reconcile_step_kube_requests_total{action="created"}');
  const createdSteps = await single('captf_reconcile_steps_total{action="created"}');
  expect(createdSteps).toBeGreaterThan(0);
  expect(created / createdSteps).toBeGreaterThanOrEqual(7);
});

it('a finished Job reaches the fleet figures: its total, its duration, the last success and the state size', async () => {
  // The test plays the kubelet: the apply's pod ends with a successful result and the backend's state.
  await finishJob(env, scrapedJob, { exitCode: 0, result: result('apply', 'succeeded') });
  await eventually(
    () => reconcile('scraped'),
    (outcome) => outcome.action === 'bookkept',
    30_000,
    'the apply bookkept',
  );
  const object = `kind="TerraformCluster",namespace="${namespace}",name="scraped"`;
  expect(
    await single('sum(captf_jobs_total{result="succeeded"})', (count) => count >= 1),
  ).toBeGreaterThanOrEqual(1);
  expect(await single(`captf_last_success_timestamp_seconds{${object},op="apply"}`)).toBeGreaterThan(0);
  expect(await single(`captf_state_bytes{${object}}`)).toBeGreaterThan(0);
  expect(await single('sum(captf_job_duration_seconds_count)', (count) => count >= 1)).toBeGreaterThanOrEqual(
    1,
  );
});

it('CAPTFInputsNearLimit fires from the real step for run inputs near 1 MiB, and not once the object is paused', async () => {
  // 900 kB of variables: the per-run Secret is over 80 % of 1 MiB. The alert has no `for`: it fires at once.
  const big = { variables: { blob: 'x'.repeat(900_000) } };
  await createCluster('big', big);
  await createCluster('big-paused', big);
  bigJob = await untilCreated('big');
  await untilCreated('big-paused');
  const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
  await custom.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: 'v1alpha1',
      namespace,
      plural: 'terraformclusters',
      name: 'big-paused',
      body: { metadata: { annotations: { 'cluster.x-k8s.io/paused': '' } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await reconcile('big-paused');
  await single(`captf_object_paused{namespace="${namespace}",name="big-paused"}`, (paused) => paused === 1);

  // Once a rule evaluation has seen the pause: firing for `big` alone (the paused one fired before its pause).
  let last = '';
  const firing = await until('CAPTFInputsNearLimit firing for big alone', async () => {
    const data = await api<{ alerts: { labels: Record<string, string>; state: string }[] }>('/api/v1/alerts');
    const mine = data.alerts.filter(
      (alert) => alert.labels.alertname === 'CAPTFInputsNearLimit' && alert.state === 'firing',
    );
    last = mine.map((alert) => alert.labels.name).join(',');
    return last === 'big' ? mine : undefined;
  }).catch((error: Error) => {
    throw new Error(`${error.message.split(';')[0]}; firing for: ${last || 'none'}`);
  });
  expect(firing[0]?.labels).toMatchObject({ kind: 'TerraformCluster', namespace, severity: 'warning' });
});

it('every query of the Grafana dashboard returns a series, and the five views of issue 15 are there', async () => {
  // A failed Job too, for the failures panel: `big`'s apply fails at `apply`.
  await finishJob(env, bigJob, {
    exitCode: 1,
    result: result('apply', 'failed', { error: { kind: 'step', step: 'apply', summary: 'quota exceeded' } }),
  });
  await eventually(
    () => reconcile('big'),
    (outcome) => outcome.action === 'bookkept',
    30_000,
    'the failed apply bookkept',
  );
  await single('sum(captf_jobs_total{result="failed"})', (count) => count >= 1);
  // `increase` needs two samples of the new series: one scrape later.
  await single('count(max by (kind, op) (increase(captf_jobs_total{result="failed"}[1m])))');
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  const titles = dashboard.panels.map((panel) => panel.title).join('\n');
  for (const view of [
    /Jobs finished by result/,
    /Job duration/,
    /Active Jobs/,
    /waiting, by reason/,
    /Age of the last success/,
  ])
    expect(titles).toMatch(view);
  for (const panel of dashboard.panels)
    for (const { expr } of panel.targets) {
      // Grafana's own variable, as it would fill it in.
      const query = expr.replaceAll('$__rate_interval', '1m');
      const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(query)}`);
      const body = (await response.json()) as {
        status: string;
        error?: string;
        data?: { result: unknown[] };
      };
      expect(body, `${panel.title}: ${expr}`).toMatchObject({ status: 'success' });
      // Every panel shows something for this fleet: a Job ran and finished, Jobs run, objects wait, and
      // the alert above fires.
      expect(body.data?.result.length ?? 0, `${panel.title}: ${expr} returned no series`).toBeGreaterThan(0);
    }
});
