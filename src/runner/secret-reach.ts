import { isJsonObject, type JsonValue } from './json.ts';

/**
 * Where Secret-fed variables reach in a module (issue 24 item 1), read from the `configuration` of
 * `show -json` (OpenTofu's JSON output format: each resource's and module call's `expressions`,
 * `for_each_expression` and their `references`); pure. The readable plan masks by reference what it cannot
 * mask by value: a key made from a Secret's earlier value, read back from the state, is a value the run no
 * longer knows. A variable passed to a module call carries the taint into the child module's variable of
 * that name. References through `local.*` are not followed (the JSON output has no locals); a key made from
 * a current Secret value through a local is still masked by value.
 */

/** Configuration addresses (module keys dropped: `module.m.terraform_data.x`, `module.m`) a Secret reaches. */
export interface SecretReach {
  /** Resources and module calls whose `for_each` reads a Secret-fed variable: their instance keys. */
  keyed: ReadonlySet<string>;
  /** Per resource, the top-level attributes whose expression reads one. */
  attributes: ReadonlyMap<string, ReadonlySet<string>>;
}

/** Reaches nothing: a run without Secret-fed variables, or a plan without configuration. */
export const NO_SECRET_REACH: SecretReach = { keyed: new Set(), attributes: new Map() };

/** Every reference anywhere in an expression (nested blocks nest expressions). */
function referencesOf(expression: JsonValue | undefined, into: string[] = []): string[] {
  if (Array.isArray(expression)) for (const item of expression) referencesOf(item, into);
  else if (isJsonObject(expression)) {
    const { references } = expression;
    if (Array.isArray(references)) for (const ref of references) if (typeof ref === 'string') into.push(ref);
    for (const [key, value] of Object.entries(expression))
      if (key !== 'references') referencesOf(value, into);
  }
  return into;
}

/**
 * The module's reach of the variables named `secretVariables` (the run's secret inputs and sensitive
 * contract inputs) from a parsed `show -json` document; NO_SECRET_REACH when it has no configuration.
 */
export function secretReach(doc: JsonValue | undefined, secretVariables: readonly string[]): SecretReach {
  const configuration = isJsonObject(doc) ? doc.configuration : undefined;
  const root = isJsonObject(configuration) ? configuration.root_module : undefined;
  if (secretVariables.length === 0 || !isJsonObject(root)) return NO_SECRET_REACH;
  const keyed = new Set<string>();
  const attributes = new Map<string, Set<string>>();
  const walk = (
    module: JsonValue | undefined,
    prefix: string,
    secrets: ReadonlySet<string>,
    depth: number,
  ) => {
    if (!isJsonObject(module) || secrets.size === 0 || depth > 32) return;
    const reads = (expression: JsonValue | undefined) =>
      referencesOf(expression).some(
        (ref) => ref.startsWith('var.') && secrets.has(ref.slice(4).split('.')[0] ?? ''),
      );
    for (const resource of Array.isArray(module.resources) ? module.resources : []) {
      if (!isJsonObject(resource) || typeof resource.address !== 'string') continue;
      const address = `${prefix}${resource.address}`;
      if (reads(resource.for_each_expression)) keyed.add(address);
      const expressions = isJsonObject(resource.expressions) ? resource.expressions : {};
      const tainted = Object.keys(expressions).filter((name) => reads(expressions[name]));
      if (tainted.length > 0) attributes.set(address, new Set(tainted));
    }
    const calls = isJsonObject(module.module_calls) ? module.module_calls : {};
    for (const [name, call] of Object.entries(calls)) {
      if (!isJsonObject(call)) continue;
      const address = `${prefix}module.${name}`;
      if (reads(call.for_each_expression)) keyed.add(address);
      const expressions = isJsonObject(call.expressions) ? call.expressions : {};
      const passed = new Set(Object.keys(expressions).filter((variable) => reads(expressions[variable])));
      walk(call.module, `${address}.`, passed, depth + 1);
    }
  };
  walk(root, '', new Set(secretVariables), 0);
  return { keyed, attributes };
}

/**
 * The configuration addresses a resource change lives under, outermost first, the resource last: for
 * `module.a["x"].module.b[0].aws_instance.web["k"]`, `module.a`, `module.a.module.b` and
 * `module.a.module.b.aws_instance.web`.
 */
export function configAddress(entry: Record<string, JsonValue | undefined>): string[] {
  const moduleAddress = typeof entry.module_address === 'string' ? entry.module_address : '';
  // Module instance keys are `[0]` or `["…"]`; dropping them leaves `module.a.module.b`.
  const modules = moduleAddress.replace(/\[(?:\d+|"(?:[^"\\]|\\.)*")\]/g, '');
  const calls: string[] = [];
  const parts = modules === '' ? [] : modules.split('.');
  for (let i = 0; i + 1 < parts.length; i += 2) calls.push(parts.slice(0, i + 2).join('.'));
  const kind = entry.mode === 'data' ? 'data.' : '';
  const resource = `${modules === '' ? '' : `${modules}.`}${kind}${String(entry.type)}.${String(entry.name)}`;
  return [...calls, resource];
}
