import type { Redactor } from '../core/redaction.ts';
import {
  DESTRUCTIVE_ACTIONS,
  PLAN_CHANGES_MAX_ADDRESS,
  PLAN_CHANGES_MAX_BYTES,
  PLAN_CHANGES_MAX_DESTRUCTIVE,
  PLAN_CHANGES_MAX_OUTPUTS,
  PLAN_CHANGES_MAX_PATH,
  PLAN_CHANGES_MAX_PATHS,
  PLAN_CHANGES_MAX_RESOURCES,
  type PlanChangeAction,
  type PlanChangeCounts,
  type PlanChanges,
  type PlanOutputChange,
  type PlanResourceChange,
  SENSITIVE_MASK,
} from '../schemas/plan-changes.ts';
import { isJsonObject, type JsonValue } from './json.ts';
import { configAddress, NO_SECRET_REACH, type SecretReach } from './secret-reach.ts';

/**
 * `show -json` → the readable plan (issue 24 item 1, src/schemas/plan-changes.ts); pure. Reads
 * `resource_changes` and `output_changes` (OpenTofu's JSON output format, "Change Representation") and
 * keeps what an approver needs: each address with OpenTofu's word for its action, the attribute paths an
 * update or replace changes, and the outputs that change. Values never leave this function: before and
 * after are compared here and only the paths where they differ are kept; a path under a value OpenTofu
 * marks sensitive (`before_sensitive`/`after_sensitive` is `true` there) stops at that attribute, since
 * OpenTofu hides even the keys of a sensitive map. Instance keys and map keys come from data, so two rules
 * keep a Secret's value out of them, both masking a key whole as `(sensitive value)`:
 * - by value: a key that holds a value the run's redactor knows (Secret-fed variables, the bootstrap data);
 * - by reference (src/runner/secret-reach.ts): the keys of a resource or module call whose `for_each` reads a
 *   Secret-fed variable, and the paths under an attribute whose expression reads one (the path stops at the
 *   attribute, as for a sensitive one). This covers the values the redactor cannot know: a key a
 *   previous Secret value made, read back from the state (a delete of the old instance).
 * Resource, module and attribute names come from the module's code and are kept.
 */

/** Deepest attribute nesting walked; deeper differences are reported at this depth. */
const MAX_DEPTH = 32;

/** OpenTofu's word for an action list (its `plans.Action` string forms as `show -json` writes them). */
export function actionWord(actions: readonly string[]): PlanChangeAction | undefined {
  const key = actions.join(',');
  switch (key) {
    case 'create':
    case 'update':
    case 'delete':
    case 'read':
    case 'forget':
      return key;
    case 'delete,create':
    case 'create,delete':
      return 'replace';
    default:
      // `no-op`, or an action this version does not know: nothing to approve.
      return undefined;
  }
}

/** Cuts to `max` characters (code points), marking the cut with `…`. */
function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Renders one path step as OpenTofu writes paths: `.name`, `[0]`, `["key"]`; a secret key is masked. */
function step(key: string | number, isSecret: (text: string) => boolean, first: boolean): string {
  if (typeof key === 'number') return `[${key}]`;
  if (isSecret(key)) return `[${SENSITIVE_MASK}]`;
  if (IDENTIFIER.test(key)) return first ? key : `.${key}`;
  return `[${JSON.stringify(key)}]`;
}

function render(path: readonly (string | number)[], isSecret: (text: string) => boolean): string {
  return path.map((key, index) => step(key, isSecret, index === 0)).join('');
}

function child(value: JsonValue | undefined, key: string | number): JsonValue | undefined {
  if (typeof key === 'number') return Array.isArray(value) ? value[key] : undefined;
  return isJsonObject(value) ? value[key] : undefined;
}

function sameJson(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((key) => sameJson(a[key], b[key]));
  }
  return false;
}

/** The parts of a change the walk compares: values and their unknown and sensitive marks. */
export interface Sides {
  before: JsonValue | undefined;
  after: JsonValue | undefined;
  unknown: JsonValue | undefined;
  beforeSensitive: JsonValue | undefined;
  afterSensitive: JsonValue | undefined;
}

function childSides(sides: Sides, key: string | number): Sides {
  return {
    before: child(sides.before, key),
    after: child(sides.after, key),
    unknown: child(sides.unknown, key),
    beforeSensitive: child(sides.beforeSensitive, key),
    afterSensitive: child(sides.afterSensitive, key),
  };
}

/**
 * The attribute paths where `before` and `after` differ or `after` is unknown until apply, in document
 * order; stops at a sensitive attribute (the path is kept, nothing under it).
 */
export function changedPaths(sides: Sides): (string | number)[][] {
  const found: (string | number)[][] = [];
  const keysOf = (value: JsonValue | undefined): (string | number)[] =>
    Array.isArray(value) ? value.map((_, i) => i) : isJsonObject(value) ? Object.keys(value) : [];
  const walk = (at: Sides, path: (string | number)[]) => {
    const unknown = at.unknown === true;
    if (at.beforeSensitive === true || at.afterSensitive === true || path.length >= MAX_DEPTH) {
      if (unknown || !sameJson(at.before, at.after)) found.push(path);
      return;
    }
    if (unknown) {
      found.push(path);
      return;
    }
    const { before, after } = at;
    const lists = Array.isArray(before) && Array.isArray(after);
    const objects = isJsonObject(before) && isJsonObject(after);
    if (lists || objects) {
      // `after_unknown` also names the parts computed at apply, which `after` leaves out.
      const keys = new Set([...keysOf(before), ...keysOf(after), ...keysOf(at.unknown)]);
      for (const key of keys) walk(childSides(at, key), [...path, key]);
      return;
    }
    if (!sameJson(before, after)) found.push(path);
  };
  walk(sides, []);
  // The root itself is the resource: its appearance or removal is the action, not a path.
  return found.filter((path) => path.length > 0);
}

/** Replaces every `["…"]` instance key of an address that holds a Secret's value. */
export function maskAddress(address: string, isSecret: (text: string) => boolean): string {
  // OpenTofu writes string instance keys as JSON-quoted strings in brackets.
  return address.replace(/\["((?:[^"\\]|\\.)*)"\]/g, (whole, raw: string) => {
    let key: string;
    try {
      key = JSON.parse(`"${raw}"`) as string;
    } catch {
      key = raw;
    }
    return isSecret(key) || isSecret(raw) ? `[${SENSITIVE_MASK}]` : whole;
  });
}

function pathList(paths: readonly (string | number)[][], isSecret: (text: string) => boolean) {
  return [...new Set(paths.map((path) => cut(render(path, isSecret), PLAN_CHANGES_MAX_PATH)))];
}

/** `replace_paths` as `show -json` writes it: a list of paths, each a list of keys. */
function replacePathsOf(raw: JsonValue | undefined): (string | number)[][] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((path): path is JsonValue[] => Array.isArray(path))
    .map((path) =>
      path.filter((key): key is string | number => typeof key === 'string' || typeof key === 'number'),
    );
}

/** Marks every attribute of `tainted` sensitive on top of OpenTofu's own marks. */
function withTainted(marks: JsonValue | undefined, tainted: ReadonlySet<string>): JsonValue | undefined {
  if (tainted.size === 0) return marks;
  const base = isJsonObject(marks) ? marks : {};
  return { ...base, ...Object.fromEntries([...tainted].map((name) => [name, true])) };
}

function resourceEntry(
  entry: Record<string, JsonValue | undefined>,
  change: Record<string, JsonValue | undefined>,
  action: PlanChangeAction,
  isSecret: (text: string) => boolean,
  reach: SecretReach,
): PlanResourceChange {
  const deposed = typeof entry.deposed === 'string' ? ` (deposed ${entry.deposed})` : '';
  const where = configAddress(entry);
  const keyed = where.some((part) => reach.keyed.has(part));
  const masked = maskAddress(String(entry.address), keyed ? () => true : isSecret);
  const address = cut(`${masked}${deposed}`, PLAN_CHANGES_MAX_ADDRESS);
  const tainted = reach.attributes.get(where.at(-1) ?? '') ?? new Set<string>();
  const out: PlanResourceChange = { address, action };
  if (typeof entry.action_reason === 'string') out.reason = cut(entry.action_reason, 64);
  if (action === 'update' || action === 'replace') {
    const all = pathList(
      changedPaths({
        before: change.before,
        after: change.after,
        unknown: change.after_unknown,
        beforeSensitive: withTainted(change.before_sensitive, tainted),
        afterSensitive: withTainted(change.after_sensitive, tainted),
      }),
      isSecret,
    );
    if (all.length > 0) out.paths = all.slice(0, PLAN_CHANGES_MAX_PATHS);
    if (all.length > PLAN_CHANGES_MAX_PATHS) out.morePaths = all.length - PLAN_CHANGES_MAX_PATHS;
    const replace = pathList(replacePathsOf(change.replace_paths), isSecret);
    if (replace.length > 0) out.replacePaths = replace.slice(0, PLAN_CHANGES_MAX_PATHS);
  }
  return out;
}

/** Outcome of reading the readable plan: a value, never a throw; errors name what is missing, never a value. */
export type ReadPlanChanges = { ok: true; changes: PlanChanges } | { ok: false; message: string };

/** Limits of the bound; the defaults are the schema's (tests pass smaller ones). */
export interface PlanChangesBound {
  maxResources: number;
  maxBytes: number;
}

const DEFAULT_BOUND: PlanChangesBound = {
  maxResources: PLAN_CHANGES_MAX_RESOURCES,
  maxBytes: PLAN_CHANGES_MAX_BYTES,
};

const utf8 = new TextEncoder();

/**
 * The readable plan of a parsed `show -json` document. `redactor` is the run's (src/runner/run-secrets.ts):
 * a key it would change holds a Secret's value and is masked. `reach` says where Secret-fed variables flow
 * in the module's configuration (src/runner/secret-reach.ts). Resource changes are ordered deletes and
 * replaces first, then the rest, each in OpenTofu's order (sorted by address), and kept while both bounds
 * hold; counts cover every change.
 */
export function readPlanChanges(
  doc: JsonValue | undefined,
  redactor: Redactor,
  reach: SecretReach = NO_SECRET_REACH,
  bound: PlanChangesBound = DEFAULT_BOUND,
): ReadPlanChanges {
  if (!isJsonObject(doc)) return { ok: false, message: 'read plan changes: not a JSON object' };
  const raw = doc.resource_changes ?? [];
  if (!Array.isArray(raw)) return { ok: false, message: 'read plan changes: resource_changes is not a list' };
  const isSecret = (text: string) => redactor.redact(text) !== text;
  const counts: PlanChangeCounts = {
    resources: 0,
    create: 0,
    update: 0,
    delete: 0,
    replace: 0,
    read: 0,
    forget: 0,
    outputs: 0,
  };
  const destructive: PlanResourceChange[] = [];
  const rest: PlanResourceChange[] = [];
  for (const entry of raw) {
    if (!isJsonObject(entry) || typeof entry.address !== 'string' || !isJsonObject(entry.change)) {
      return { ok: false, message: 'read plan changes: a resource change lacks address or change' };
    }
    const actions = entry.change.actions;
    if (!Array.isArray(actions) || !actions.every((a) => typeof a === 'string')) {
      return { ok: false, message: `read plan changes: ${entry.address}: actions missing` };
    }
    const action = actionWord(actions as string[]);
    if (action === undefined) continue;
    counts.resources += 1;
    counts[action] += 1;
    (DESTRUCTIVE_ACTIONS.has(action) ? destructive : rest).push(
      resourceEntry(entry, entry.change, action, isSecret, reach),
    );
  }

  const outputs: PlanOutputChange[] = [];
  const rawOutputs = isJsonObject(doc.output_changes) ? doc.output_changes : {};
  for (const [name, change] of Object.entries(rawOutputs)) {
    if (!isJsonObject(change) || !Array.isArray(change.actions)) continue;
    const action = actionWord(change.actions.filter((a): a is string => typeof a === 'string'));
    if (action === undefined) continue;
    counts.outputs += 1;
    if (outputs.length < PLAN_CHANGES_MAX_OUTPUTS) outputs.push({ name: cut(name, 256), action });
  }

  const changes: PlanChanges = {
    resources: [],
    omittedResources: 0,
    destructive: destructive.slice(0, PLAN_CHANGES_MAX_DESTRUCTIVE).map((c) => c.address),
    outputs,
    counts,
  };
  // What the field costs without a single resource, then each resource with its separating comma.
  let bytes = utf8.encode(JSON.stringify(changes)).length + String(counts.resources).length;
  for (const resource of [...destructive, ...rest]) {
    const size = utf8.encode(JSON.stringify(resource)).length + 1;
    if (changes.resources.length >= bound.maxResources || bytes + size > bound.maxBytes) break;
    changes.resources.push(resource);
    bytes += size;
  }
  changes.omittedResources = counts.resources - changes.resources.length;
  return { ok: true, changes };
}
