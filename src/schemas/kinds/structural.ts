import { z } from 'zod';

/**
 * Turns a zod schema into a Kubernetes structural schema (CRD `openAPIV3Schema`): zod 4's JSON Schema output
 * (OpenAPI 3.0 flavour, inputs, every schema inlined) with the few constructs the API server refuses taken
 * out. Anything else it cannot express throws, so a schema that would not install fails at generation time.
 * zod's safe-integer bounds stay: zod refuses an integer past 2^53 that the API server (int64) would store.
 */

/** A node of a JSON schema, as zod emits it and the API server reads it. */
export type JsonSchemaNode = { [key: string]: unknown };

/** Keys with a child schema (or list of them) that the conversion must descend into. */
const CHILD_KEYS = ['items', 'additionalProperties'] as const;

function isNode(value: unknown): value is JsonSchemaNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function structural(node: JsonSchemaNode, path: string): JsonSchemaNode {
  const out: JsonSchemaNode = { ...node };
  delete out.$schema;
  // Keys of maps (`z.record(z.string().regex(...))`): the API server has no propertyNames; zod still checks,
  // so such a key is the one refusal the CRD cannot make (spec.variables; DESIGN.md section 2).
  delete out.propertyNames;

  if (out['x-kubernetes-int-or-string'] === true) {
    // The one anyOf a structural schema allows, in exactly this form; bounds of either branch (an empty
    // string) cannot sit beside it, so they travel as CEL rules (`x-kubernetes-validations`).
    return {
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      ...(out.description ? { description: out.description } : {}),
      ...(out['x-kubernetes-validations']
        ? { 'x-kubernetes-validations': out['x-kubernetes-validations'] }
        : {}),
    };
  }
  if ('anyOf' in out || 'oneOf' in out || 'allOf' in out || '$ref' in out || 'not' in out) {
    throw new Error(
      `build CRD schema: ${path}: unions and references are not structural; use fields and CEL rules`,
    );
  }
  if (out.format === 'date-time') {
    // The API server checks RFC 3339 itself; zod's ISO regex is long and differs only in corner cases.
    delete out.pattern;
  }
  if (out['x-kubernetes-preserve-unknown-fields'] === true) {
    // Free-form JSON (Terraform variable values): no schema below this node.
    delete out.additionalProperties;
    delete out.properties;
    return out;
  }
  if (out.type === undefined) {
    throw new Error(
      `build CRD schema: ${path}: every node needs a type (or x-kubernetes-preserve-unknown-fields)`,
    );
  }
  if (isNode(out.properties)) {
    const properties: JsonSchemaNode = {};
    for (const [name, child] of Object.entries(out.properties)) {
      if (!isNode(child)) throw new Error(`build CRD schema: ${path}.${name}: not a schema`);
      properties[name] = structural(child, `${path}.${name}`);
    }
    out.properties = properties;
    // `additionalProperties: false` is the API server's default (pruning) and is refused next to properties.
    if (out.additionalProperties === false) delete out.additionalProperties;
  }
  for (const key of CHILD_KEYS) {
    const child = out[key];
    if (isNode(child)) out[key] = structural(child, `${path}.${key}`);
  }
  return out;
}

/** The structural schema of a zod schema; throws naming the path of the first construct it cannot express. */
export function toStructuralSchema(schema: z.ZodType, path = ''): JsonSchemaNode {
  const json = z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io: 'input',
    reused: 'inline',
    cycles: 'throw',
  });
  return structural(json as JsonSchemaNode, path || '(root)');
}
