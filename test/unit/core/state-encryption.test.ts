import { describe, expect, it } from 'vitest';
import { buildRunConfig } from '../../../src/core/run-secret-manifest.ts';
import { buildRunnerIdentity } from '../../../src/core/runner-identity.ts';
import { decideStateCleanup } from '../../../src/core/state-cleanup.ts';
import {
  effectiveStateEncryption,
  installationStateEncryption,
  stateEncryptionRefs,
  stateEncryptionSecretNames,
} from '../../../src/core/state-encryption.ts';
import { passphraseOf } from '../../../src/runner/key-secrets.ts';
import {
  encryptionConfig,
  isDecryptionFailure,
  keyProviderName,
  passphraseProblem,
} from '../../../src/runner/state-encryption.ts';
import { RunConfigSchema } from '../../../src/schemas/run-config.ts';

// Issue 25 item 3: OpenTofu's client-side state encryption, the pure decisions.

const A = { name: 'state-key', key: 'a' };
const B = { name: 'state-key', key: 'b' };
const rotation = { passphraseSecretRef: B, fallback: { passphraseSecretRef: A } };

describe('which encryption a run uses (src/core/state-encryption.ts)', () => {
  it('SE-C1 the spec wins whole over the installation default; neither: none', () => {
    const fallbackDefault = {
      passphraseSecretRef: { name: 'site-key', key: 'k' },
      fallback: { unencrypted: true },
    };
    expect(effectiveStateEncryption({ passphraseSecretRef: A }, fallbackDefault)).toEqual({
      passphraseSecretRef: A,
    });
    expect(effectiveStateEncryption(undefined, fallbackDefault)).toBe(fallbackDefault);
    expect(effectiveStateEncryption(undefined, undefined)).toBeUndefined();
  });

  it('SE-C2 the Secrets read: the passphrase and the fallback, once each; spec refs need the opt-in', () => {
    expect(stateEncryptionSecretNames(rotation)).toEqual(['state-key']);
    expect(
      stateEncryptionSecretNames({
        passphraseSecretRef: B,
        fallback: { passphraseSecretRef: { name: 'old', key: 'k' } },
      }),
    ).toEqual(['state-key', 'old']);
    expect(stateEncryptionSecretNames({ passphraseSecretRef: A, fallback: { unencrypted: true } })).toEqual([
      'state-key',
    ]);
    expect(stateEncryptionRefs(rotation).map((r) => r.use)).toEqual([
      'stateEncryption.passphraseSecretRef',
      'stateEncryption.fallback.passphraseSecretRef',
    ]);
  });

  it('SE-C3 the installation settings: <secret>/<key>, a fallback of the same shape or unencrypted', () => {
    expect(installationStateEncryption(undefined, undefined)).toEqual({ ok: true, encryption: undefined });
    expect(installationStateEncryption('site-key/v2', 'site-key/v1')).toEqual({
      ok: true,
      encryption: {
        passphraseSecretRef: { name: 'site-key', key: 'v2' },
        fallback: { passphraseSecretRef: { name: 'site-key', key: 'v1' } },
      },
    });
    expect(installationStateEncryption('site-key/v1', 'unencrypted')).toMatchObject({
      ok: true,
      encryption: { fallback: { unencrypted: true } },
    });
    for (const [secret, fallback] of [
      [undefined, 'site-key/v1'],
      ['site-key', undefined],
      ['site-key/v1/x', undefined],
      ['Site/v1', undefined],
      ['captf-plan-key-x/v1', undefined],
      ['site-key/v1', 'site-key/v1'],
      ['unencrypted', undefined],
    ] as const) {
      expect(installationStateEncryption(secret, fallback).ok, `${secret} ${fallback}`).toBe(false);
    }
  });

  it('SE-C4 the run config names where the passphrases are, never a value; the namespace is the object’s', () => {
    const config = buildRunConfig({
      namespace: 'team-a',
      stateSuffix: 'm-web',
      variables: {},
      secretVariables: {},
      contractInputs: { values: {}, sensitive: [] },
      backend: undefined,
      backendSecretData: {},
      stateEncryption: rotation,
      lockTimeoutSeconds: 300,
      applyPolicy: 'Automatic',
      planHmacKey: 'k'.repeat(32),
    });
    expect(config.stateEncryption).toEqual({ namespace: 'team-a', passphrase: B, fallback: A });
    expect(RunConfigSchema.parse(config).stateEncryption).toEqual(config.stateEncryption);
  });

  it("SE-C5 the runner identity's Role gets `get` on exactly the key Secrets, never the state's own", () => {
    const identity = (stateEncryption?: typeof rotation | { passphraseSecretRef: typeof A }) =>
      buildRunnerIdentity({
        owner: {
          apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
          kind: 'TerraformMachine',
          name: 'web',
          namespace: 'team-a',
          uid: 'u',
        },
        source: {
          backend: undefined,
          namespace: 'team-a',
          stateSuffix: 'm-web',
          ...(stateEncryption ? { stateEncryption } : {}),
        },
      });
    const plain = identity();
    const encrypted = identity(rotation);
    // The key rule after the state's two, before the run log's.
    expect(encrypted.role.rules).toEqual([
      ...plain.role.rules.slice(0, 2),
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['state-key'], verbs: ['get'] },
      ...plain.role.rules.slice(2),
    ]);
    // A new Role is a new identity: the step replaces it (its RoleBinding digest changes).
    expect(encrypted.roleBinding.metadata.annotations).not.toEqual(plain.roleBinding.metadata.annotations);
  });

  it('SE-C6 an encrypted state is deleted with the finalizer only after a successful destroy', () => {
    const objects = {
      namespace: 'n',
      stateSecret: 'tfstate-default-m-web',
      lockLease: 'lock-tfstate-default-m-web',
    };
    expect(decideStateCleanup(objects, 'encrypted', true)).toEqual({ kind: 'delete' });
    const kept = decideStateCleanup(objects, 'encrypted', false);
    expect(kept.kind).toBe('keep');
    if (kept.kind === 'keep') expect(kept.event.note).toContain('is encrypted');
    // Proof of no resources elsewhere is unchanged.
    expect(decideStateCleanup(objects, 'resources', true).kind).toBe('keep');
  });
});

describe("the runner's TF_ENCRYPTION (src/runner/state-encryption.ts)", () => {
  const pa = { location: A, value: 'correct-horse-battery-staple-a' };
  const pb = { location: B, value: 'correct-horse-battery-staple-b' };

  it('SE-R1 key provider names follow the Secret key: stable, distinct per key, no passphrase in them', () => {
    expect(keyProviderName(A)).toBe(keyProviderName({ ...A }));
    expect(keyProviderName(A)).not.toBe(keyProviderName(B));
    expect(keyProviderName(A)).toMatch(/^k_[0-9a-f]{16}$/);
  });

  it('SE-R2 one passphrase: pbkdf2 + aes_gcm for state and plan, enforced', () => {
    const config = JSON.parse(encryptionConfig(pa));
    const name = keyProviderName(A);
    expect(config.key_provider.pbkdf2).toEqual({ [name]: { passphrase: pa.value } });
    expect(config.method.aes_gcm).toEqual({ [`m${name.slice(1)}`]: { keys: `key_provider.pbkdf2.${name}` } });
    expect(config.state).toEqual({ method: `method.aes_gcm.m${name.slice(1)}`, enforced: true });
    expect(config.plan).toEqual(config.state);
  });

  it('SE-R3 rotation: written under the new passphrase, read with the old as the fallback', () => {
    const config = JSON.parse(encryptionConfig(pb, pa));
    expect(Object.keys(config.key_provider.pbkdf2)).toEqual([keyProviderName(B), keyProviderName(A)]);
    expect(config.state).toEqual({
      method: `method.aes_gcm.m${keyProviderName(B).slice(1)}`,
      enforced: true,
      fallback: { method: `method.aes_gcm.m${keyProviderName(A).slice(1)}` },
    });
  });

  it('SE-R4 encrypting a plain state: the unencrypted fallback, which OpenTofu allows only unenforced', () => {
    const config = JSON.parse(encryptionConfig(pa, 'unencrypted'));
    expect(config.method.unencrypted).toEqual({ plain: {} });
    expect(config.state).toMatchObject({ enforced: false, fallback: { method: 'method.unencrypted.plain' } });
  });

  it("SE-R5 OpenTofu's decryption failures are told from other failures", () => {
    const error = (summary: string, detail = '') => ({ severity: 'error' as const, summary, detail });
    expect(
      isDecryptionFailure([
        error(
          'error loading state: decryption failed for all provided methods',
          'attempted decryption failed for state: decryption failed: cipher: message authentication failed',
        ),
      ]),
    ).toBe(true);
    expect(isDecryptionFailure([error('Failed to load state', 'no decryption key available')])).toBe(true);
    // A plain state met by encryption without the unencrypted fallback, and the reverse (OpenTofu 1.12.6).
    expect(
      isDecryptionFailure([
        error('error loading state: encountered unencrypted payload without unencrypted method configured'),
      ]),
    ).toBe(true);
    expect(
      isDecryptionFailure([
        error(
          'error loading state: Unsupported state file format: This state file is encrypted and can not be read without an encryption configuration',
        ),
      ]),
    ).toBe(true);
    expect(isDecryptionFailure([error('Error acquiring the state lock', 'lock held')])).toBe(false);
    expect(
      isDecryptionFailure([
        { severity: 'warning', summary: 'decryption failed for all provided methods', detail: '' },
      ]),
    ).toBe(false);
  });

  it('SE-R6 a passphrase under 16 characters is refused, naming the Secret key and not the value', () => {
    const short = { location: A, value: 'too-short' };
    expect(passphraseProblem(short)).toContain('Secret state-key key a has 9 characters');
    expect(passphraseProblem(short)).not.toContain('too-short');
    expect(passphraseProblem(pa)).toBeUndefined();
  });

  it('SE-R7 reading the key Secret: 200 with the key, and each failure named without a value', () => {
    const body = JSON.stringify({ data: { a: Buffer.from(pa.value).toString('base64') } });
    expect(passphraseOf(A, { status: 200, body })).toEqual(pa);
    expect(passphraseOf(B, { status: 200, body })).toEqual({
      problem: 'the state encryption Secret state-key has no key b',
    });
    expect(passphraseOf(A, { status: 404, body: '' })).toEqual({
      problem: 'the state encryption Secret state-key does not exist',
    });
    expect(passphraseOf(A, { status: 403, body: '' })).toMatchObject({
      problem: expect.stringContaining('(403)'),
    });
    const short = JSON.stringify({ data: { a: Buffer.from('short-one').toString('base64') } });
    expect(passphraseOf(A, { status: 200, body: short })).toMatchObject({
      problem: expect.stringContaining('has 9 characters'),
    });
  });
});
