import type { RunConfig } from '../schemas/run-config.ts';
import type { JsonValue } from './json.ts';

/** What replaces a secret value wherever the runner writes or prints text. */
export const REDACTED = '(redacted)';

/**
 * Replaces secret values in text. Built once per run from the run config (DESIGN.md section 10, C15); a
 * pure value, so the summary, the result document and the runner's own log all go through the same one.
 */
export interface Redactor {
  /** Returns `text` with every secret (and its JSON/HCL-escaped form) replaced by REDACTED. */
  redact(text: string): string;
}

/**
 * The texts to hide for one secret value: every string leaf, and number leaves of four digits or more
 * (shorter numbers are too common to hide without wrecking unrelated text, and too short to be a credential).
 */
export function secretTexts(value: JsonValue): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (typeof value === 'number') return String(value).length >= 4 ? [String(value)] : [];
  if (value === null || typeof value === 'boolean') return [];
  if (Array.isArray(value)) return value.flatMap(secretTexts);
  return Object.values(value).flatMap((v) => (v === undefined ? [] : secretTexts(v)));
}

/**
 * Builds a redactor for the given secrets. Each secret is also hidden in its escaped form, because
 * Terraform quotes values in diagnostics (`is "tok-…"`) with HCL/JSON escapes. Longest first, so a secret
 * that contains another is hidden whole.
 */
export function createRedactor(secrets: readonly string[]): Redactor {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === '') continue;
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

/** Returns a copy of a JSON value with every string leaf (and key) redacted: the last pass over the result. */
export function redactJson<T extends JsonValue>(value: T, redactor: Redactor): T {
  const walk = (v: JsonValue): JsonValue => {
    if (typeof v === 'string') return redactor.redact(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: { [key: string]: JsonValue } = {};
    for (const [k, inner] of Object.entries(v))
      if (inner !== undefined) out[redactor.redact(k)] = walk(inner);
    return out;
  };
  return walk(value) as T;
}

/** Every secret of a run config: secret inputs, secret backend settings and the plan HMAC key. */
export function runConfigSecrets(config: RunConfig): string[] {
  const inputs = config.secretInputs.flatMap((name) => {
    const value = config.variables[name];
    return value === undefined ? [] : secretTexts(value);
  });
  const backend = config.backend;
  const backendSecrets = (backend?.secretKeys ?? []).flatMap((key) => {
    const value = backend?.config[key];
    return value === undefined ? [] : secretTexts(value);
  });
  return [...inputs, ...backendSecrets, config.planHmacKey];
}
