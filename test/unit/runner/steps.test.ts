import { describe, expect, it } from 'vitest';
import { OP_STEPS, type StepInputs, stepCommand } from '../../../src/runner/steps.ts';
import { OPS } from '../../../src/schemas/result.ts';

const inputs: StepInputs = {
  lockTimeoutSeconds: 300,
  varFile: '/w/captf.tfvars.json',
  backendConfigFile: '/w/captf.backend.tfbackend',
  planFile: '/w/captf.tfplan',
  forceUnlockId: 'lock-1',
};

describe('steps per op (DESIGN.md section 10)', () => {
  it('the op tables follow the contract', () => {
    expect(OP_STEPS).toEqual({
      apply: ['init', 'force-unlock', 'validate', 'plan', 'show-json', 'apply'],
      destroy: ['init', 'force-unlock', 'destroy'],
      refresh: ['init', 'force-unlock', 'apply-refresh-only'],
      drift: ['init', 'force-unlock', 'plan'],
    });
  });

  it('every step that can take the state lock gets -lock-timeout; every step disables color', () => {
    for (const op of OPS) {
      for (const step of OP_STEPS[op]) {
        const { args } = stepCommand(op, step, inputs);
        const locking = !['force-unlock', 'validate', 'show-json'].includes(step);
        expect(args.includes('-lock-timeout=300s'), `${op}/${step}`).toBe(locking);
        if (step !== 'force-unlock') expect(args, `${op}/${step}`).toContain('-no-color');
      }
    }
  });

  it('apply applies only the saved plan; drift plans with -detailed-exitcode and treats 2 as success', () => {
    expect(stepCommand('apply', 'apply', inputs).args).toEqual([
      'apply',
      '-input=false',
      '-no-color',
      '-json',
      '-lock-timeout=300s',
      '/w/captf.tfplan',
    ]);
    expect(stepCommand('apply', 'plan', inputs).args).toContain('-out=/w/captf.tfplan');
    const drift = stepCommand('drift', 'plan', inputs);
    expect(drift.args).toContain('-detailed-exitcode');
    expect(drift.args.some((a) => a.startsWith('-out='))).toBe(false);
    expect(drift.okExits).toEqual([0, 2]);
  });

  it('init passes the backend config file; force-unlock is best effort with -force', () => {
    expect(stepCommand('apply', 'init', inputs).args).toContain('-backend-config=/w/captf.backend.tfbackend');
    expect(stepCommand('apply', 'force-unlock', inputs)).toEqual({
      args: ['force-unlock', '-force', 'lock-1'],
      output: 'text',
      okExits: 'all',
    });
  });
});
