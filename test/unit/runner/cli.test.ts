import { describe, expect, it } from 'vitest';
import { parseCommandLine, RUN_DEFAULTS } from '../../../src/runner/cli.ts';

describe('runner command line', () => {
  it('run with defaults: the image-contract paths and the stop timeout', () => {
    expect(parseCommandLine(['run', '--op=apply'])).toEqual({
      command: 'run',
      resultFile: '/dev/termination-log',
      options: {
        op: 'apply',
        moduleDir: '/captf/module',
        runtimePath: '/captf/runtime',
        configDir: '/captf/config',
        workDir: '/captf/work',
        stopTimeoutSeconds: RUN_DEFAULTS.stopTimeoutSeconds,
        serviceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount',
      },
    });
  });

  it('run with every flag', () => {
    const digest = `sha256:${'f'.repeat(64)}`;
    const parsed = parseCommandLine([
      'run',
      '--op=drift',
      '--module-dir=/m',
      '--runtime=/r',
      '--config-dir=/c',
      '--work-dir=/w',
      '--result-file=/res',
      '--lock-timeout=30',
      '--stop-timeout=60',
      `--expected-plan-digest=${digest}`,
      '--apply-policy=Manual',
      '--force-unlock-id=abc',
      '--service-account-dir=/sa',
    ]);
    expect(parsed).toEqual({
      command: 'run',
      resultFile: '/res',
      options: {
        op: 'drift',
        moduleDir: '/m',
        runtimePath: '/r',
        configDir: '/c',
        workDir: '/w',
        lockTimeoutSeconds: 30,
        stopTimeoutSeconds: 60,
        expectedPlanDigest: digest,
        applyPolicy: 'Manual',
        forceUnlockId: 'abc',
        serviceAccountDir: '/sa',
      },
    });
  });

  it.each([
    { id: 'no op', argv: ['run'] },
    { id: 'unknown op', argv: ['run', '--op=plan'] },
    { id: 'unknown flag', argv: ['run', '--op=apply', '--lock=false'] },
    { id: 'lock timeout above 3600', argv: ['run', '--op=apply', '--lock-timeout=3601'] },
    { id: 'bad digest', argv: ['run', '--op=apply', '--expected-plan-digest=abc'] },
    { id: 'empty service account dir', argv: ['run', '--op=apply', '--service-account-dir='] },
    { id: 'copy without dest', argv: ['copy'] },
    { id: 'unknown command', argv: ['plan'] },
  ])('$id is a usage error', ({ argv }) => {
    expect(parseCommandLine(argv).command).toBe('usage-error');
  });

  it('copy takes one destination', () => {
    expect(parseCommandLine(['copy', '/captf/bin'])).toEqual({ command: 'copy', dest: '/captf/bin' });
  });
});
