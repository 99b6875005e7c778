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

/**
 * Parse outcome of `show -json <plan>`: a value, never a throw. `changedOutputs` names the root outputs
 * whose planned actions are not `no-op` (a replaced server changes the outputs it feeds).
 */
export type ParsedPlan =
  | { ok: true; changes: PlannedChange[]; changedOutputs: string[] }
  | { ok: false; message: string };

/** Root outputs the plan changes (`output_changes` with an action other than no-op), sorted. */
function changedOutputsOf(raw: JsonValue | undefined): string[] {
  if (!isJsonObject(raw)) return [];
  return Object.entries(raw)
    .filter(([, change]) => {
      const actions = isJsonObject(change) ? change.actions : undefined;
      return Array.isArray(actions) && actions.some((action) => action !== 'no-op');
    })
    .map(([name]) => name)
    .sort();
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
  return { ok: true, changes, changedOutputs: changedOutputsOf(doc.output_changes) };
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
