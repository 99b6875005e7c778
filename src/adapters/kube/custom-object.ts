import { z } from 'zod';

/**
 * Our custom objects (and Cluster API Clusters) as the API server sends them: metadata checked and typed,
 * `spec` and `status` left for the caller to parse with the kind's own schema. Unlike client-node's typed
 * models, custom objects arrive as plain JSON, so timestamps here are RFC 3339 strings, not `Date`s.
 */

const OwnerReferenceSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});

export const CustomObjectMetaSchema = z.looseObject({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string(),
  resourceVersion: z.string(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z.array(OwnerReferenceSchema).optional(),
});
export type CustomObjectMeta = z.infer<typeof CustomObjectMetaSchema>;

export const CustomObjectSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: CustomObjectMetaSchema,
  spec: z.unknown().optional(),
  status: z.unknown().optional(),
});
/** A custom object read from the API server; `spec`/`status` are unparsed. */
export type CustomObject = z.infer<typeof CustomObjectSchema>;

/**
 * A custom object the caller writes (create): like CustomObject, but the server fills uid and
 * resourceVersion.
 */
export interface NewCustomObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: z.infer<typeof OwnerReferenceSchema>[];
  };
  spec?: unknown;
  status?: unknown;
}

/**
 * Checks an API answer's shape. Throws an Error naming `action` when the server sent something that is not
 * an object with metadata: that is a bug (wrong path, wrong API), not an outcome.
 */
export function parseCustomObject(value: unknown, action: string): CustomObject {
  const parsed = CustomObjectSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${action}: unexpected answer: ${parsed.error.message}`);
  return parsed.data;
}

const CustomListSchema = z.looseObject({
  items: z.array(z.unknown()),
  metadata: z.looseObject({ continue: z.string().optional() }).optional(),
});

/** Reads one page of a custom-object list: its items and the `continue` token (empty when done). */
export function parseCustomList(
  value: unknown,
  action: string,
): { items: CustomObject[]; continueToken: string } {
  const parsed = CustomListSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${action}: unexpected answer: ${parsed.error.message}`);
  return {
    items: parsed.data.items.map((item) => parseCustomObject(item, action)),
    continueToken: parsed.data.metadata?.continue ?? '',
  };
}
