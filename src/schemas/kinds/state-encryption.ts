import { z } from 'zod';
import { type CrossFieldRule, withRules } from './rules.ts';

/**
 * `spec.stateEncryption` (issue 25 item 3): OpenTofu's client-side state and plan encryption, a `pbkdf2` key
 * provider whose passphrase a Secret holds and the `aes_gcm` method
 * (https://opentofu.org/docs/language/state/encryption/). The runner reads the Secret as the object's runner
 * identity, whose Role names it (src/core/runner-identity.ts), and hands OpenTofu the configuration in
 * `TF_ENCRYPTION` (src/runner/state-encryption.ts); the passphrase never passes through the controller.
 */

/** OpenTofu's `pbkdf2` key provider refuses a passphrase shorter than this (its `MinimumPassphraseLength`). */
export const MIN_PASSPHRASE_LENGTH = 16;

/**
 * Secret name prefixes a passphrase may not come from: the controller's own Secrets (`captf-`: plan keys,
 * per-run Secrets) and states (`tfstate-`). The runner identity's Role grants `get` on the passphrase
 * Secrets, and the admission policy infra/admission/controller-runner-identity-policy.yaml refuses a grant
 * on those names.
 */
export const RESERVED_KEY_SECRET_PREFIXES = ['captf-', 'tfstate-'] as const;

/** A passphrase Secret is none of the controller's or OpenTofu's own. */
export const keySecretNotReserved: CrossFieldRule<{ name: string }> = {
  cel: "!self.name.startsWith('captf-') && !self.name.startsWith('tfstate-')",
  message:
    "a passphrase Secret name may not start with captf- (the controller's own Secrets) or tfstate- (states); keep the passphrase in a Secret of its own",
  fieldPath: '.name',
  holds: (v) => !RESERVED_KEY_SECRET_PREFIXES.some((prefix) => v.name.startsWith(prefix)),
};

export const PassphraseSecretRefSchema = withRules(
  z
    .object({
      name: z.string().min(1).max(253).describe('Name of the Secret in the object namespace.'),
      key: z
        .string()
        .min(1)
        .max(253)
        .describe('Key inside it holding the passphrase (at least 16 characters).'),
    })
    .describe(
      'The Secret key holding a passphrase; the Secret must carry the label captf.io/variables=true, like every Secret whose data reaches a module.',
    ),
  [keySecretNotReserved],
);
export type PassphraseSecretRef = z.infer<typeof PassphraseSecretRefSchema>;

/** A fallback is one old passphrase, or the state as it was before encryption: one of the two. */
export const fallbackOneKind: CrossFieldRule<{
  passphraseSecretRef?: PassphraseSecretRef | undefined;
  unencrypted?: boolean | undefined;
}> = {
  cel: 'has(self.passphraseSecretRef) != (has(self.unencrypted) && self.unencrypted)',
  message:
    'set fallback.passphraseSecretRef (the old passphrase, to rotate) or fallback.unencrypted: true (to encrypt a state written in plain), one of them',
  holds: (v) => (v.passphraseSecretRef !== undefined) !== (v.unencrypted === true),
};

export const StateEncryptionFallbackSchema = withRules(
  z
    .object({
      passphraseSecretRef: PassphraseSecretRefSchema.optional().describe(
        'The previous passphrase: a state it encrypted is still read, and written again under the new one.',
      ),
      unencrypted: z
        .boolean()
        .optional()
        .describe(
          'Read a state written without encryption (turning encryption on for an object that has state); the next write encrypts it. Remove once that apply succeeded.',
        ),
    })
    .describe(
      'What OpenTofu reads a state with when the passphrase fails (key rotation, or encrypting a plain state); every write uses the passphrase.',
    ),
  [fallbackOneKind],
);
export type StateEncryptionFallback = z.infer<typeof StateEncryptionFallbackSchema>;

/** A rotation names a new passphrase: the fallback may not be the passphrase's own Secret key. */
export const fallbackDiffers: CrossFieldRule<{
  passphraseSecretRef: PassphraseSecretRef;
  fallback?: StateEncryptionFallback | undefined;
}> = {
  cel: '!has(self.fallback) || !has(self.fallback.passphraseSecretRef) || self.fallback.passphraseSecretRef.name != self.passphraseSecretRef.name || self.fallback.passphraseSecretRef.key != self.passphraseSecretRef.key',
  message:
    'fallback.passphraseSecretRef names the passphrase itself: a rotation puts the new passphrase in another Secret key and names the old one as the fallback',
  fieldPath: '.fallback',
  holds: (v) => {
    const old = v.fallback?.passphraseSecretRef;
    return (
      old === undefined || old.name !== v.passphraseSecretRef.name || old.key !== v.passphraseSecretRef.key
    );
  },
};

export const StateEncryptionSchema = withRules(
  z
    .object({
      passphraseSecretRef: PassphraseSecretRefSchema.describe(
        'The passphrase every state and plan is encrypted with (pbkdf2 key, aes_gcm).',
      ),
      fallback: StateEncryptionFallbackSchema.optional(),
    })
    .describe(
      "OpenTofu's client-side state and plan encryption (pbkdf2 + aes_gcm), passphrase from a Secret; absent: the installation's default (CAPTF_STATE_ENCRYPTION_SECRET), if any. A state is unreadable without its passphrase: keep the Secret backed up.",
    ),
  [fallbackDiffers],
);
export type StateEncryption = z.infer<typeof StateEncryptionSchema>;
