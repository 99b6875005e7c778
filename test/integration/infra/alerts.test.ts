import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CAPTF_VERSION } from '../../../src/version.ts';
import { findPromtool, PROMETHEUS_RULE, ruleGroupsOf } from './prometheus.ts';

// DESIGN.md section 14: the shipped PrometheusRule's groups, checked and unit-tested by Prometheus's own
// promtool against infra/monitoring/tests/alerts.test.yaml (each alert fires, and stays quiet for a paused
// object, a disabled schedule, a blocked or plan-changed run).

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const TESTS = join(root, 'infra/monitoring/tests/alerts.test.yaml');

/** The eleven alerts of issue 15 item 6, and issue 24 item 5's CAPTFPlanAwaitingApproval. */
const ALERTS = [
  'CAPTFJobFailing',
  'CAPTFDestroyStuck',
  'CAPTFClusterDrift',
  'CAPTFStateUnreadable',
  'CAPTFForceUnlocks',
  'CAPTFReconcileErrors',
  'CAPTFJobSlow',
  'CAPTFJobQueueSlow',
  'CAPTFStateNearSecretLimit',
  'CAPTFInputsNearLimit',
  'CAPTFNoRecentSuccess',
  'CAPTFPlanAwaitingApproval',
];

/** Recording rules: the settings an installation changes (one number each). */
const RECORDS = ['captf:plan_approval_alert_after_seconds'];

/** The shipped groups with `captf:plan_approval_alert_after_seconds` set to `seconds`. */
function withApprovalAfter(seconds: number) {
  return ruleGroupsOf(PROMETHEUS_RULE).map((group) => ({
    ...group,
    rules: group.rules.map((rule) =>
      rule.record === 'captf:plan_approval_alert_after_seconds'
        ? { ...rule, expr: `vector(${seconds})` }
        : rule,
    ),
  }));
}

interface RuleTest {
  alertname: string;
  exp_alerts: unknown[];
}

let promtool: string;
let dir: string;

/** Runs promtool on `groups` as rules.yaml next to the shipped test cases; never throws. */
async function promtoolTest(groups: unknown): Promise<{ ok: boolean; output: string }> {
  writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
  try {
    const { stdout, stderr } = await run(promtool, ['test', 'rules', join(dir, 'alerts.test.yaml')]);
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

beforeAll(() => {
  promtool = findPromtool();
  dir = mkdtempSync(join(tmpdir(), 'captf-alerts-'));
  copyFileSync(TESTS, join(dir, 'alerts.test.yaml'));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the shipped alerts (promtool)', () => {
  it('the PrometheusRule carries the twelve alerts and their setting, and `promtool check rules` accepts them', async () => {
    const groups = ruleGroupsOf(PROMETHEUS_RULE);
    const alerts = groups.flatMap((group) => group.rules.flatMap((rule) => (rule.alert ? [rule.alert] : [])));
    expect(alerts.sort()).toEqual([...ALERTS].sort());
    const records = groups.flatMap((group) =>
      group.rules.flatMap((rule) => (rule.record ? [rule.record] : [])),
    );
    expect(records).toEqual(RECORDS);
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    const { stdout } = await run(promtool, ['check', 'rules', join(dir, 'rules.yaml')]);
    expect(stdout).toContain(`SUCCESS: ${ALERTS.length + RECORDS.length} rules found`);
  });

  it('CAPTFPlanAwaitingApproval waits as long as its setting says: set to 3 hours, the 2h 5m case stays quiet', async () => {
    const { ok, output } = await promtoolTest(withApprovalAfter(3 * 3600));
    expect(ok).toBe(false);
    expect(output).toContain('alertname: CAPTFPlanAwaitingApproval');
    expect(output).not.toContain('alertname: CAPTFJobSlow');
    expect((await promtoolTest(withApprovalAfter(7200))).ok).toBe(true);
  });

  it('every alert links its runbook: a file under docs/runbooks/ of this release, at a heading it has', () => {
    const prefix = `https://github.com/captf/captf-serverless/blob/v${CAPTF_VERSION}/docs/runbooks/`;
    /** GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to dashes. */
    const anchorOf = (heading: string) =>
      heading
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, '')
        .replaceAll(' ', '-');
    // Alerting rules only: a recording rule (a setting) has no annotations.
    const alerting = ruleGroupsOf(PROMETHEUS_RULE).flatMap((group) =>
      group.rules.filter((rule) => rule.alert),
    );
    for (const rule of alerting) {
      const url = rule.annotations?.runbook_url ?? '';
      expect(url.startsWith(prefix), `${rule.alert}: ${url}`).toBe(true);
      const [file = '', anchor] = url.slice(prefix.length).split('#');
      const markdown = readFileSync(join(root, 'docs/runbooks', file), 'utf8');
      if (anchor === undefined) continue;
      const anchors = [...markdown.matchAll(/^#+ (.+)$/gm)].map((match) => anchorOf(match[1] ?? ''));
      expect(anchors, `${rule.alert}: #${anchor}`).toContain(anchor);
    }
  });

  it('the test cases cover every alert firing and quiet', () => {
    const cases = parse(readFileSync(TESTS, 'utf8')) as { tests: { alert_rule_test: RuleTest[] }[] };
    const checks = cases.tests.flatMap((test) => test.alert_rule_test);
    for (const alert of ALERTS) {
      const mine = checks.filter((check) => check.alertname === alert);
      expect(
        mine.some((check) => check.exp_alerts.length > 0),
        `${alert} fires`,
      ).toBe(true);
      expect(
        mine.some((check) => check.exp_alerts.length === 0),
        `${alert} stays quiet`,
      ).toBe(true);
    }
  });

  it('`promtool test rules` passes every case', async () => {
    const { ok, output } = await promtoolTest(ruleGroupsOf(PROMETHEUS_RULE));
    expect(output).toContain('SUCCESS');
    expect(ok, output).toBe(true);
  });

  it('the quiet cases hold the rules to their joins: without the pause join, paused objects alert', async () => {
    const paused =
      /\s*unless on \([a-z, ]+\) \(max by \([a-z, ]+\) \(captf_object_paused(\{[^}]*\})?\) == 1\)/g;
    const groups = ruleGroupsOf(PROMETHEUS_RULE).map((group) => ({
      ...group,
      rules: group.rules.map((rule) => ({ ...rule, expr: rule.expr.replace(paused, '') })),
    }));
    const { ok, output } = await promtoolTest(groups);
    expect(ok).toBe(false);
    for (const alert of [
      'CAPTFDestroyStuck',
      'CAPTFClusterDrift',
      'CAPTFJobSlow',
      'CAPTFNoRecentSuccess',
      'CAPTFPlanAwaitingApproval',
    ])
      expect(output).toContain(`alertname: ${alert}`);
    expect(output).toContain('name="paused"');
  });
});
