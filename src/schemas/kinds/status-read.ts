import type { z } from 'zod';
import type { TargetStatus } from './target.ts';

/**
 * Reading a status an earlier release may have written (issue 23 item 4). Values a release renamed are
 * read as their new names (tolerant reading: the object carries on as if this release had written it);
 * anything else the schema rejects makes the status unreadable, and the step acts on none of it
 * (`StatusUnreadable`, DESIGN.md section 6): a status read as empty would lose `stateSuffix`, `lastSuccess`
 * and the attempts, and build or destroy on the wrong state.
 */

/**
 * Values earlier releases wrote that this one names differently, per field path. 9b153af: `lastRun.error.kind`
 * took the runbook's values; an image pull failure is recorded `unknown` (no readable result) and a deadline
 * kill `interrupted`, exactly what the classifier records for the same evidence today.
 */
export const RENAMED_STATUS_VALUES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'lastRun.error.kind': { 'image-pull': 'unknown', deadline: 'interrupted' },
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` with the renamed value at `path` replaced; the input is not changed. */
function renamedAt(
  value: unknown,
  path: readonly string[],
  renames: Readonly<Record<string, string>>,
): unknown {
  if (!isRecord(value)) return value;
  const [key, ...rest] = path;
  if (key === undefined || !(key in value)) return value;
  const inner = value[key];
  if (rest.length > 0) {
    const next = renamedAt(inner, rest, renames);
    return next === inner ? value : { ...value, [key]: next };
  }
  return typeof inner === 'string' && Object.hasOwn(renames, inner)
    ? { ...value, [key]: renames[inner] }
    : value;
}

/** The raw status with every renamed value of {@link RENAMED_STATUS_VALUES} read as its new name. */
export function withRenamedValues(raw: unknown): unknown {
  let status = raw;
  for (const [path, renames] of Object.entries(RENAMED_STATUS_VALUES))
    status = renamedAt(status, path.split('.'), renames);
  return status;
}

/** A status as the step reads it. */
export type StatusRead<S extends TargetStatus = TargetStatus> =
  | { kind: 'readable'; status: S }
  /**
   * `status` holds only the top-level fields that parse on their own (what a write may be computed
   * against without removing the rest); `paths` names the fields that do not, values never quoted.
   */
  | { kind: 'unreadable'; status: S; paths: string[] };

/**
 * Reads `raw` (the object's `status`, possibly absent) with `schema`, renamed values first. Never throws.
 */
export function readStatus<S extends TargetStatus>(schema: z.ZodType<S>, raw: unknown): StatusRead<S> {
  const renamed = withRenamedValues(raw ?? {});
  const parsed = schema.safeParse(renamed);
  if (parsed.success) return { kind: 'readable', status: parsed.data };
  const paths = [
    ...new Set(
      parsed.error.issues.map((issue) => (issue.path.length > 0 ? issue.path.join('.') : '(status)')),
    ),
  ].sort();
  const readable: Record<string, unknown> = {};
  if (isRecord(renamed)) {
    // Every field of the status schema is optional, so each top-level field parses alone.
    for (const [key, value] of Object.entries(renamed)) {
      const field = schema.safeParse({ [key]: value });
      if (field.success && key in field.data) readable[key] = (field.data as Record<string, unknown>)[key];
    }
  }
  return { kind: 'unreadable', status: readable as S, paths };
}
