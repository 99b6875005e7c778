import type { Redactor } from '../core/redaction.ts';
import { SUMMARY_MAX_BYTES } from '../schemas/result.ts';
import type { Diagnostic } from './machine-ui.ts';

/**
 * The curated error summary (DESIGN.md section 10): built from Terraform's `-json` diagnostics only, never
 * from raw output; redacted before it is cut, so a cut never leaves a secret's tail; at most
 * SUMMARY_MAX_BYTES bytes of UTF-8.
 */

/** Marks a summary that was cut to fit. */
const ELLIPSIS = '…';

/** Terraform's boilerplate after a lock error's lock info: the lock info is what a reader needs. */
const LOCK_ADVICE = /\s*Terraform acquires a state lock[\s\S]*$|\s*OpenTofu acquires a state lock[\s\S]*$/;

/** Cuts text to at most `maxBytes` bytes of UTF-8 without splitting a character, marking the cut. */
export function cutToBytes(text: string, maxBytes: number): string {
  const encoder = new TextEncoder();
  if (encoder.encode(text).length <= maxBytes) return text;
  const budget = maxBytes - encoder.encode(ELLIPSIS).length;
  let out = '';
  let used = 0;
  for (const char of text) {
    const size = encoder.encode(char).length;
    if (used + size > budget) break;
    out += char;
    used += size;
  }
  return out + ELLIPSIS;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function describe(diagnostic: Diagnostic): string {
  const detail = oneLine(diagnostic.detail.replace(LOCK_ADVICE, ''));
  const where = diagnostic.where === undefined ? '' : ` (${diagnostic.where})`;
  const head = `${oneLine(diagnostic.summary)}${where}`;
  return detail === '' ? head : `${head}: ${detail}`;
}

/**
 * Summarises a failed step from its diagnostics: the errors (warnings only when there is no error), joined
 * by `; `, redacted, cut to SUMMARY_MAX_BYTES. `fallback` (a fixed sentence the runner composes, e.g.
 * "plan exited 1 without diagnostics") is used when there is no diagnostic at all.
 */
export function curateSummary(
  diagnostics: readonly Diagnostic[],
  fallback: string,
  redactor: Redactor,
): string {
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const chosen = errors.length > 0 ? errors : diagnostics;
  // Terraform repeats a diagnostic once per instance (count, for_each): one mention is enough.
  const text = chosen.length > 0 ? [...new Set(chosen.map(describe))].join('; ') : fallback;
  return cutToBytes(redactor.redact(text), SUMMARY_MAX_BYTES);
}
