/**
 * Redaction of secret values (DESIGN.md section 13, C15): one rule for the runner and the controller.
 * Secret values are cut out of free text only (error summaries, condition messages, Event notes, HTTP
 * answers, logs), never by substring inside structured fields (module outputs, Job names, plan references,
 * hashes, timestamps): a region or a name that happens to equal a secret must not corrupt a providerID.
 * Outputs that must stay secret are those Terraform marks `sensitive`; they never leave the Job at all.
 */

/** What replaces a secret value in text. */
export const REDACTED = '[redacted]';

/**
 * Secret values shorter than this are not redacted: they would shred ordinary words ("small", "true",
 * "demo") and reveal little; credentials are longer. Documented in docs/DESIGN.md section 13 notes and
 * the README.
 */
export const MIN_SECRET_LENGTH = 6;

/** A JSON value as `JSON.parse` returns it. */
export type SecretJson =
  | string
  | number
  | boolean
  | null
  | SecretJson[]
  | { [key: string]: SecretJson | undefined };

/** Replaces secret values in text. */
export interface Redactor {
  /** Returns `text` with every secret (and its JSON-escaped form) replaced by REDACTED. */
  redact(text: string): string;
}

/**
 * The texts to hide for one secret value: every string leaf, and number leaves of four digits or more
 * (shorter numbers are too common to hide without wrecking unrelated text, and too short to be a
 * credential). The minimum length applies when the redactor is built.
 */
export function secretTexts(value: SecretJson): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (typeof value === 'number') return String(value).length >= 4 ? [String(value)] : [];
  if (value === null || typeof value === 'boolean') return [];
  if (Array.isArray(value)) return value.flatMap(secretTexts);
  return Object.values(value).flatMap((v) => (v === undefined ? [] : secretTexts(v)));
}

/** The texts to hide for a value read from a Secret key: the raw text and, when it is JSON, its leaves. */
export function secretTextsOfSecretValue(text: string): string[] {
  try {
    return [text, ...secretTexts(JSON.parse(text) as SecretJson)];
  } catch {
    return [text];
  }
}

/**
 * Builds a redactor for `secrets`. Each secret is also hidden in its escaped form, because Terraform quotes
 * values in diagnostics (`is "tok-…"`) with HCL/JSON escapes. Longest first, so a secret that contains
 * another is hidden whole. Secrets below MIN_SECRET_LENGTH are ignored.
 */
export function createRedactor(secrets: readonly string[]): Redactor {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  return {
    redact(text: string): string {
      let out = text;
      for (const form of ordered) out = out.split(form).join(REDACTED);
      return out;
    },
  };
}

/** Redacts nothing: before the secrets are known. */
export const NO_REDACTION: Redactor = createRedactor([]);
