import { createHash } from 'node:crypto';
import { MIN_PASSPHRASE_LENGTH } from '../schemas/kinds/state-encryption.ts';
import type { SecretKeyLocation } from '../schemas/run-config.ts';
import type { Diagnostic } from './machine-ui.ts';

/**
 * OpenTofu's state and plan encryption for one run (issue 25 item 3), as pure functions: the `TF_ENCRYPTION`
 * text (https://opentofu.org/docs/language/state/encryption/, JSON syntax: the body of the `encryption`
 * block) and how a failure to decrypt is told from other failures. The passphrases themselves are read by
 * src/runner/key-secrets.ts.
 */

/** One passphrase and the Secret key it came from (which names its key provider). */
export interface Passphrase {
  location: SecretKeyLocation;
  value: string;
}

/**
 * The key provider's name for a passphrase: `k_` and 16 hex of SHA-256 over its Secret's name and key.
 * OpenTofu writes the key provider's name into every state it encrypts (its `meta`) and on reading looks
 * the provider up by it, so the name must follow the passphrase from run to run, and differ between the new
 * passphrase and the old one of a rotation: both follow from its place (a rotation names another key, which
 * the spec's rules ask). It reveals nothing about the passphrase.
 */
export function keyProviderName(location: SecretKeyLocation): string {
  const digest = createHash('sha256').update(`${location.name}\u0000${location.key}`).digest('hex');
  return `k_${digest.slice(0, 16)}`;
}

/** Why a passphrase cannot be used, or undefined: OpenTofu's pbkdf2 refuses one under 16 characters. */
export function passphraseProblem(passphrase: Passphrase): string | undefined {
  const { name, key } = passphrase.location;
  if (passphrase.value.length >= MIN_PASSPHRASE_LENGTH) return undefined;
  return `the state encryption passphrase in Secret ${name} key ${key} has ${passphrase.value.length} characters; OpenTofu's pbkdf2 needs at least ${MIN_PASSPHRASE_LENGTH}`;
}

/**
 * The `TF_ENCRYPTION` value: a `pbkdf2` key provider per passphrase, an `aes_gcm` method on each, the state
 * and the plan under the new one, and a fallback: the old passphrase's method (rotation: OpenTofu reads
 * with the old one when the new one fails and writes with the new one), or the `unencrypted` method (a
 * state written in plain is read, and written encrypted). `enforced` (no plain write ever) unless the
 * fallback is `unencrypted`, which OpenTofu refuses to combine with it. Pure.
 */
export function encryptionConfig(passphrase: Passphrase, fallback?: Passphrase | 'unencrypted'): string {
  const keyProviders: Record<string, { passphrase: string }> = {};
  const aesGcm: Record<string, { keys: string }> = {};
  const methodOf = (p: Passphrase): string => {
    const name = keyProviderName(p.location);
    keyProviders[name] = { passphrase: p.value };
    aesGcm[`m${name.slice(1)}`] = { keys: `key_provider.pbkdf2.${name}` };
    return `method.aes_gcm.m${name.slice(1)}`;
  };
  const method = methodOf(passphrase);
  const methods: Record<string, unknown> = { aes_gcm: aesGcm };
  let fallbackMethod: string | undefined;
  if (fallback === 'unencrypted') {
    methods.unencrypted = { plain: {} };
    fallbackMethod = 'method.unencrypted.plain';
  } else if (fallback !== undefined) {
    fallbackMethod = methodOf(fallback);
  }
  const target = {
    method,
    enforced: fallback !== 'unencrypted',
    ...(fallbackMethod ? { fallback: { method: fallbackMethod } } : {}),
  };
  return JSON.stringify({
    key_provider: { pbkdf2: keyProviders },
    method: methods,
    state: target,
    plan: target,
  });
}

/**
 * OpenTofu's words (1.12) when no configured key opens the state or plan: `decryption failed for all
 * provided methods`, with `cipher: message authentication failed` for a wrong passphrase or `no decryption
 * key available` for a key provider the data does not name; `encountered unencrypted payload without
 * unencrypted method configured` for a plain state met by encryption without the `unencrypted` fallback; and
 * `This state file is encrypted and can not be read without an encryption configuration` for an encrypted
 * state met by a run without encryption (the spec's or default's encryption removed).
 */
const DECRYPTION_FAILURE =
  /decryption failed for all provided methods|message authentication failed|no decryption key available|unencrypted payload without unencrypted method|state file is encrypted and can not be read/i;

/** Whether a failed step's diagnostics say the state or plan could not be decrypted. Pure. */
export function isDecryptionFailure(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some(
    (d) =>
      d.severity === 'error' && (DECRYPTION_FAILURE.test(d.summary) || DECRYPTION_FAILURE.test(d.detail)),
  );
}
