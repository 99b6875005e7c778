/**
 * JSON merge patches (RFC 7386) between two JSON documents: what the status write sends so that only the
 * fields the step changed travel, removed fields become `null`, and arrays are replaced whole.
 */

type Json = unknown;

function isPlainObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep equality of two JSON values (key order ignored). */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set(
      [...Object.keys(a), ...Object.keys(b)].filter((k) => a[k] !== undefined || b[k] !== undefined),
    );
    return [...keys].every((key) => jsonEqual(a[key], b[key]));
  }
  return false;
}

/**
 * The merge patch that turns `before` into `after` (both objects); undefined when they are equal. Keys
 * absent from `after` become `null`; nested objects are diffed; arrays and scalars are replaced.
 */
export function mergePatchOf(
  before: Record<string, Json>,
  after: Record<string, Json>,
): Record<string, Json> | undefined {
  const patch: Record<string, Json> = {};
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const key of keys) {
    const was = before[key];
    const now = after[key];
    if (now === undefined) {
      if (was !== undefined) patch[key] = null;
      continue;
    }
    if (jsonEqual(was, now)) continue;
    if (isPlainObject(was) && isPlainObject(now)) {
      const nested = mergePatchOf(was, now);
      if (nested !== undefined) patch[key] = nested;
    } else {
      patch[key] = now;
    }
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}
