import { TARGET_KINDS, type TargetKind } from '../schemas/kinds/api-group.ts';

/**
 * The name of one of our objects (DESIGN.md section 2), as the step, the schedule, the routes and the
 * sweep pass it around. The requeue schedule's member is `kind/namespace/name` (section 8).
 */

/** Our object kinds, defined once by the schema, under the name the step uses. */
export const OBJECT_KINDS = TARGET_KINDS;
export type ObjectKind = TargetKind;

/** Identifies one object. */
export interface ObjectRef {
  kind: ObjectKind;
  namespace: string;
  name: string;
}

/** `kind/namespace/name`: the schedule member and the key of per-object maps. */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}
