import type { ReferencedSecrets } from './snapshot.ts';

/**
 * Defence in depth for C15: the runner already redacts what it reports, but before any text the controller
 * writes (status, Events, outcome messages) leaves the step, every value of the Secrets the object's inputs
 * reference is cut out of it, so a runner bug cannot leak a credential through the controller.
 */

/** Returns `text` with every known secret value replaced. */
export type Redactor = (text: string) => string;

/** Shorter values are not redacted: they would shred ordinary words and reveal little. */
const MIN_SECRET_LENGTH = 4;
const MASK = '[redacted]';

function stringLeaves(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') into.add(value);
  else if (Array.isArray(value)) for (const item of value) stringLeaves(item, into);
  else if (typeof value === 'object' && value !== null)
    for (const item of Object.values(value)) stringLeaves(item, into);
}

/** The redactor for the Secret data of one object: each value, and each string inside a JSON value. */
export function redactorOf(secrets: ReferencedSecrets): Redactor {
  const values = new Set<string>();
  for (const data of secrets.values()) {
    for (const value of Object.values(data ?? {})) {
      values.add(value);
      try {
        stringLeaves(JSON.parse(value), values);
      } catch {
        // Not JSON: the raw value alone is the secret.
      }
    }
  }
  // Longest first, so a value that contains another is cut whole.
  const ordered = [...values]
    .filter((v) => v.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((out, value) => out.split(value).join(MASK), text);
}

/** `value` with the redactor applied to every string inside it (objects and arrays copied). */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, redact)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, redactDeep(item, redact)]),
    ) as T;
  }
  return value;
}
