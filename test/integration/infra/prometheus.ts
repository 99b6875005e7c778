import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { parse } from 'yaml';

/**
 * Prometheus's own tools for the alert tests (DESIGN.md section 14): `promtool` and `prometheus` from
 * Debian's `prometheus` package, which scripts/setup.sh installs. A missing tool fails the test with what
 * to install, never skips it.
 */

const root = join(import.meta.dirname, '..', '..', '..');

/** The shipped PrometheusRule. */
export const PROMETHEUS_RULE = join(root, 'infra/monitoring/prometheusrule.yaml');

/** One rule of a rule group, as far as the tests read it. */
export interface Rule {
  /** An alerting rule's name; absent on a recording rule. */
  alert?: string;
  /** A recording rule's name (the shipped settings); absent on an alerting rule. */
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The `spec.groups` of a PrometheusRule file: what a plain Prometheus rule file holds under `groups`. */
export function ruleGroupsOf(path: string): { name: string; rules: Rule[] }[] {
  const rule = parse(readFileSync(path, 'utf8')) as { spec: { groups: { name: string; rules: Rule[] }[] } };
  return rule.spec.groups;
}

/** The path of `name` on PATH (or in /usr/bin, where Debian puts it); throws with what to install. */
function findTool(name: string): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin'];
  for (const dir of dirs) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not in this directory.
    }
  }
  throw new Error(
    `${name} not found: install Debian's prometheus package (scripts/setup.sh does: apt-get install prometheus)`,
  );
}

/** `promtool`, or a thrown Error saying how to get it. */
export function findPromtool(): string {
  return findTool('promtool');
}

/** `prometheus`, or a thrown Error saying how to get it. */
export function findPrometheus(): string {
  return findTool('prometheus');
}
