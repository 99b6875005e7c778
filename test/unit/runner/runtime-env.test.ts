import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/core/redaction.ts';
import { registryTokens, runtimeEnv } from '../../../src/runner/runtime-env.ts';

// Issue 25 item 3: the runtime's environment carries the run's TF_ENCRYPTION and the spec's registry tokens;
// the tokens are secrets of the run (the tok-123-canary suite: never in anything the runner prints).

describe('runtimeEnv with state encryption and registry tokens', () => {
  const base = {
    PATH: '/bin',
    TF_TOKEN_registry_example_com: 'tok-123-canary',
    TF_ENCRYPTION: '{"image":"own"}',
    TF_CLI_ARGS_plan: '-lock=false',
  };

  it('RE1 the run’s TF_ENCRYPTION replaces an image’s; without one the image’s own stays', () => {
    expect(runtimeEnv(base, '/w/tmp', {}, '{"run":"config"}').TF_ENCRYPTION).toBe('{"run":"config"}');
    expect(runtimeEnv(base, '/w/tmp').TF_ENCRYPTION).toBe('{"image":"own"}');
  });

  it('RE2 a registry token reaches OpenTofu unchanged, and is redacted from what the runner prints', () => {
    const env = runtimeEnv(base, '/w/tmp');
    expect(env.TF_TOKEN_registry_example_com).toBe('tok-123-canary');
    expect(env.TF_CLI_ARGS_plan).toBeUndefined();
    expect(registryTokens(base)).toEqual(['tok-123-canary']);
    const redactor = createRedactor(registryTokens(base));
    expect(redactor.redact('401 from registry.example.com with tok-123-canary')).not.toContain(
      'tok-123-canary',
    );
    expect(registryTokens({ TF_TOKEN_x: '', OTHER: 'v' })).toEqual([]);
  });
});
