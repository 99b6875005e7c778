import { accessSync, constants, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parse } from 'yaml';
import { readVersions } from '../../../src/local/binaries.ts';

/**
 * Prometheus's own tools for the alert tests (DESIGN.md section 14): `promtool` from Debian's `prometheus`
 * package, which scripts/setup.sh installs, and a `prometheus` server that scripts/build-binaries.sh builds
 * with Kubernetes service discovery (Debian's is built without it, so it cannot run the shipped scrape
 * config). A missing tool fails the test with what to install or build, never skips it.
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

/** The built `prometheus` (PROMETHEUS_VERSION of scripts/versions.env), or a thrown Error saying how to build it. */
export function findPrometheus(env: NodeJS.ProcessEnv = process.env): string {
  const version = readVersions().PROMETHEUS_VERSION;
  const cache = env.CAPTF_CACHE ?? join(homedir(), '.cache', 'captf');
  const path = join(cache, 'bin', `prometheus-v${version}`, 'prometheus');
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    throw new Error(`${path} is missing; build it with: bash scripts/build-binaries.sh prometheus`);
  }
}
