import { z } from 'zod';
import { NamespaceSchema, ObjectNameSchema } from './cloudevents.ts';
import { TARGET_KINDS as OBJECT_KINDS, type TargetKind as ObjectKind } from './kinds/api-group.ts';

/** Bodies, path parameters and query strings of the HTTP routes (DESIGN.md section 13). */

/**
 * Spellings of our kinds accepted in `/reconcile/{kind}/…`: the kind, its lower case and its plural
 * resource name, as `kubectl` users type them.
 */
const KIND_SPELLINGS: Readonly<Record<string, ObjectKind>> = Object.fromEntries(
  OBJECT_KINDS.flatMap((kind) => [
    [kind, kind],
    [kind.toLowerCase(), kind],
    [`${kind.toLowerCase()}s`, kind],
  ]),
);

/** Looks a path spelling of a kind up; undefined when it is not one of ours. */
export function kindFromPath(spelling: string): ObjectKind | undefined {
  return Object.hasOwn(KIND_SPELLINGS, spelling) ? KIND_SPELLINGS[spelling] : undefined;
}

/** `POST /reconcile/{kind}/{namespace}/{name}` path parameters (the kind is looked up separately: 404). */
export const ReconcileParamsSchema = z.object({
  kind: z.string().max(64),
  namespace: NamespaceSchema,
  name: ObjectNameSchema,
});

/** `?dryRun=true|false`; absent means false. */
export const ReconcileQuerySchema = z
  .object({ dryRun: z.enum(['true', 'false']).optional() })
  .strict()
  .transform((q) => ({ dryRun: q.dryRun === 'true' }));

/**
 * `POST /tick` body: empty, or the JSON object a PingSource sends (its `data` is free-form and ignored), so
 * only the shape is checked.
 */
export const TickBodySchema = z.union([z.undefined(), z.null(), z.record(z.string(), z.unknown())]);
