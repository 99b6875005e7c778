import { describe, expect, it } from 'vitest';
import { runConfigSecrets } from '../../../src/runner/run-secrets.ts';
import { parseRunConfig } from '../../../src/schemas/run-config.ts';

const KEY = 'k'.repeat(32);

describe('run config (src/schemas/run-config.ts)', () => {
  it('fills defaults: no variables, lock timeout 300, Automatic policy', () => {
    const parsed = parseRunConfig(JSON.stringify({ version: 1, planHmacKey: KEY }));
    expect(parsed).toEqual({
      ok: true,
      config: {
        version: 1,
        planHmacKey: KEY,
        variables: {},
        secretInputs: [],
        contractInputs: {},
        sensitiveContractInputs: [],
        lockTimeoutSeconds: 300,
        applyPolicy: 'Automatic',
      },
    });
  });

  it('an invalid config names the path and the rule, never the value', () => {
    const parsed = parseRunConfig(JSON.stringify({ version: 1, planHmacKey: 'tok-123-canary' }));
    expect(parsed).toEqual({ ok: false, message: 'read run config: planHmacKey: too_small' });
    expect(parseRunConfig('{ "planHmacKey": "tok-123-canary"')).toEqual({
      ok: false,
      message: 'read run config: not JSON',
    });
  });

  it('secrets: the values of secret inputs, secret backend settings and the HMAC key', () => {
    const parsed = parseRunConfig(
      JSON.stringify({
        version: 1,
        planHmacKey: KEY,
        variables: { token: 'tok-1', creds: { user: 'u', password: 'pw-2' }, name: 'public' },
        secretInputs: ['token', 'creds', 'absent'],
        backend: { type: 'kubernetes', config: { token: 'kube-3', namespace: 'ns' }, secretKeys: ['token'] },
      }),
    );
    if (!parsed.ok) throw new Error(parsed.message);
    expect(runConfigSecrets(parsed.config)).toEqual(['tok-1', 'u', 'pw-2', 'kube-3', KEY]);
  });
});
