import { createHash, createHmac } from 'node:crypto';
import { canonicalJson } from '../core/canonical-json.ts';
import type { PlanSummary } from '../schemas/result.ts';
import { isJsonObject, type JsonValue } from './json.ts';
import { jsonDocument } from './machine-ui.ts';

/**
 * The plan digest (DESIGN.md section 11): one line per resource change,
 * `address|actions|HMAC-SHA256(per-object key, canonical change)`, sorted, each ending in `\n`, then
 * SHA-256 over the lines, written `sha256:<hex>`. The HMAC keeps planned sensitive values out of the
 * digest; the sort makes it independent of Terraform's output order.
 */

/** One resource change of a plan, reduced to what the digest and the guard read. */
export interface PlannedChange {
  /** Resource address, with ` (deposed <key>)` for a deposed object so both objects keep their own line. */
  address: string;
  /** Terraform's action list, e.g. `["delete","create"]` for a replace. */
  actions: string[];
  /** The change object of `show -json` (before, after, after_unknown, …). */
  change: JsonValue;
}

/** Actions that change nothing: `no-op`, and `read` (a data source read is not a change to approve). */
const INERT_ACTIONS: ReadonlySet<string> = new Set(['no-op', 'read']);

/** The planned value of one root output the plan changes: known (`after`) or computed at apply. */
export type PlannedOutput = { known: true; after: JsonValue | undefined } | { known: false };

/**
 * Parse outcome of `show -json <plan>`: a value, never a throw. `plannedOutputs` holds the root outputs
 * whose planned actions are not `no-op` (a replaced server changes the outputs it feeds), with their values.
 */
export type ParsedPlan =
  | { ok: true; changes: PlannedChange[]; plannedOutputs: Record<string, PlannedOutput> }
  | { ok: false; message: string };

/** Root outputs the plan changes (`output_changes` with an action other than no-op), with their values. */
function changedOutputsOf(raw: JsonValue | undefined): Record<string, PlannedOutput> {
  const changed: Record<string, PlannedOutput> = {};
  if (!isJsonObject(raw)) return changed;
  for (const [name, change] of Object.entries(raw)) {
    if (!isJsonObject(change)) continue;
    const { actions } = change;
    if (!Array.isArray(actions) || !actions.some((action) => action !== 'no-op')) continue;
    // `after_unknown` is `true`, or an object/array marking the parts computed at apply.
    changed[name] = hasUnknown(change.after_unknown)
      ? { known: false }
      : { known: true, after: change.after };
  }
  return changed;
}

/** Whether an `after_unknown` structure marks any part as unknown (`true` somewhere in it). */
function hasUnknown(marks: JsonValue | undefined): boolean {
  if (marks === true) return true;
  if (Array.isArray(marks)) return marks.some(hasUnknown);
  if (isJsonObject(marks)) return Object.values(marks).some(hasUnknown);
  return false;
}

/**
 * Whether the plan moves a latched contract output (Cluster API's `providerID`, `controlPlaneEndpoint`,
 * set once and never again) away from the value `latched` recorded: it changes the output and its planned
 * value is computed at apply or differs from `latched`. A plan that only creates the output with the
 * recorded value (an endpoint a person set before the first apply) keeps it.
 */
export function movesLatchedOutput(plan: ParsedPlan & { ok: true }, name: string, latched: unknown): boolean {
  const planned = plan.plannedOutputs[name];
  if (planned === undefined) return false;
  return !planned.known || canonicalJson(planned.after) !== canonicalJson(latched);
}

/**
 * Reads the resource changes of a `show -json` plan document, dropping inert ones (no-op, read).
 * Errors name what is missing, never a value.
 */
export function readPlanDocument(stdout: string): ParsedPlan {
  const doc = jsonDocument(stdout);
  if (!isJsonObject(doc)) return { ok: false, message: 'read plan: show -json printed no JSON object' };
  const raw = doc.resource_changes ?? [];
  if (!Array.isArray(raw)) return { ok: false, message: 'read plan: resource_changes is not a list' };
  const changes: PlannedChange[] = [];
  for (const entry of raw) {
    if (!isJsonObject(entry) || typeof entry.address !== 'string' || !isJsonObject(entry.change)) {
      return { ok: false, message: 'read plan: a resource change lacks address or change' };
    }
    const actions = entry.change.actions;
    if (!Array.isArray(actions) || !actions.every((a) => typeof a === 'string')) {
      return { ok: false, message: `read plan: ${entry.address}: actions missing` };
    }
    if (actions.every((a) => INERT_ACTIONS.has(a))) continue;
    const deposed = typeof entry.deposed === 'string' ? ` (deposed ${entry.deposed})` : '';
    changes.push({ address: `${entry.address}${deposed}`, actions, change: entry.change });
  }
  return { ok: true, changes, plannedOutputs: changedOutputsOf(doc.output_changes) };
}

/** The digest of a set of planned changes under the per-object key (UTF-8 bytes). */
export function planDigest(changes: readonly PlannedChange[], hmacKey: string): string {
  const lines = changes.map((c) => {
    const mac = createHmac('sha256', hmacKey).update(canonicalJson(c.change)).digest('hex');
    return `${c.address}|${c.actions.join(',')}|${mac}\n`;
  });
  lines.sort();
  return `sha256:${createHash('sha256').update(lines.join('')).digest('hex')}`;
}

/**
 * Counts as Terraform does (a replace is one add and one destroy) and flags deletes and replaces, which
 * the Automatic policy holds for approval (DESIGN.md section 2).
 */
export function summarizePlan(changes: readonly PlannedChange[], hmacKey: string): PlanSummary {
  const has = (c: PlannedChange, action: string) => c.actions.includes(action);
  const destroy = changes.filter((c) => has(c, 'delete')).length;
  return {
    digest: planDigest(changes, hmacKey),
    add: changes.filter((c) => has(c, 'create')).length,
    change: changes.filter((c) => has(c, 'update')).length,
    destroy,
    destructive: destroy > 0,
  };
}
