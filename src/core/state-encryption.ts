import { keySecretNotReserved, type StateEncryption } from '../schemas/kinds/state-encryption.ts';
import type { VariablesSecretRef } from './variables-opt-in.ts';

/**
 * Which state encryption a run uses (issue 25 item 3), decided without I/O: the object's
 * `spec.stateEncryption`, else the installation's default (`CAPTF_STATE_ENCRYPTION_SECRET`, src/config.ts),
 * else none. The Secrets are always read in the object's namespace, by the runner, as the runner identity
 * (src/core/runner-identity.ts grants exactly them).
 */

/**
 * The encryption of a run: the spec's when it names one (the whole block: a spec never mixes its passphrase
 * with the default's fallback), else the installation default; undefined: no encryption.
 */
export function effectiveStateEncryption(
  spec: StateEncryption | undefined,
  installationDefault: StateEncryption | undefined,
): StateEncryption | undefined {
  return spec ?? installationDefault;
}

/** The names of the Secrets an encryption reads (passphrase, then the fallback's), without repeats. */
export function stateEncryptionSecretNames(encryption: StateEncryption | undefined): string[] {
  if (encryption === undefined) return [];
  const names = [encryption.passphraseSecretRef.name];
  const old = encryption.fallback?.passphraseSecretRef?.name;
  if (old !== undefined && !names.includes(old)) names.push(old);
  return names;
}

/**
 * The key Secrets a spec names, as opt-in references (src/core/variables-opt-in.ts): a passphrase reaches
 * the module's process (OpenTofu's environment), so like a variable it may come only from a Secret labelled
 * `captf.io/variables=true`; otherwise whoever may create an object could have its runner identity granted
 * any Secret of the namespace. The installation default is the admin's own configuration and needs none.
 */
export function stateEncryptionRefs(spec: StateEncryption | undefined): VariablesSecretRef[] {
  if (spec === undefined) return [];
  const refs = [{ secret: spec.passphraseSecretRef.name, use: 'stateEncryption.passphraseSecretRef' }];
  const old = spec.fallback?.passphraseSecretRef;
  if (old !== undefined) refs.push({ secret: old.name, use: 'stateEncryption.fallback.passphraseSecretRef' });
  return refs;
}

/** What the installation setting text says: `<secret>/<key>`, or (for a fallback) `unencrypted`. */
export type EncryptionSetting =
  | { kind: 'passphrase'; name: string; key: string }
  | { kind: 'unencrypted' }
  | { kind: 'invalid'; message: string };

const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

/**
 * Parses `CAPTF_STATE_ENCRYPTION_SECRET` or `CAPTF_STATE_ENCRYPTION_FALLBACK`: `<secret name>/<key>` (a
 * Secret name holds no `/`, a key may not either), or `unencrypted` where `allowUnencrypted`. Pure; the
 * message names the setting, never a value beyond its shape.
 */
export function parseEncryptionSetting(
  setting: string,
  text: string,
  allowUnencrypted: boolean,
): EncryptionSetting {
  if (allowUnencrypted && text === 'unencrypted') return { kind: 'unencrypted' };
  const [name = '', key = '', ...rest] = text.split('/');
  if (!keySecretNotReserved.holds({ name }))
    return { kind: 'invalid', message: `${setting}: ${keySecretNotReserved.message}` };
  if (rest.length > 0 || !SECRET_NAME.test(name) || !SECRET_KEY.test(key)) {
    return {
      kind: 'invalid',
      message: `${setting}: <secret name>/<key>${allowUnencrypted ? ' or unencrypted' : ''}, the Secret in each object's namespace`,
    };
  }
  return { kind: 'passphrase', name, key };
}

/**
 * The installation default from its two settings; a fallback without a passphrase is refused, and so is a
 * fallback naming the passphrase itself (the same rule as the spec's, src/schemas/kinds/state-encryption.ts).
 */
export function installationStateEncryption(
  secret: string | undefined,
  fallback: string | undefined,
): { ok: true; encryption: StateEncryption | undefined } | { ok: false; message: string } {
  if (secret === undefined) {
    return fallback === undefined
      ? { ok: true, encryption: undefined }
      : {
          ok: false,
          message: 'CAPTF_STATE_ENCRYPTION_FALLBACK: only with CAPTF_STATE_ENCRYPTION_SECRET',
        };
  }
  const main = parseEncryptionSetting('CAPTF_STATE_ENCRYPTION_SECRET', secret, false);
  if (main.kind === 'invalid') return { ok: false, message: main.message };
  if (main.kind !== 'passphrase') return { ok: false, message: 'CAPTF_STATE_ENCRYPTION_SECRET: invalid' };
  const passphraseSecretRef = { name: main.name, key: main.key };
  if (fallback === undefined) return { ok: true, encryption: { passphraseSecretRef } };
  const old = parseEncryptionSetting('CAPTF_STATE_ENCRYPTION_FALLBACK', fallback, true);
  if (old.kind === 'invalid') return { ok: false, message: old.message };
  if (old.kind === 'unencrypted')
    return { ok: true, encryption: { passphraseSecretRef, fallback: { unencrypted: true } } };
  if (old.name === main.name && old.key === main.key) {
    return {
      ok: false,
      message: 'CAPTF_STATE_ENCRYPTION_FALLBACK: names the passphrase itself; a rotation uses another key',
    };
  }
  return {
    ok: true,
    encryption: { passphraseSecretRef, fallback: { passphraseSecretRef: { name: old.name, key: old.key } } },
  };
}
