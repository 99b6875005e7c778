import { describe, expect, it } from 'vitest';
import { hash6, jobName, MAX_JOB_NAME_LENGTH, nextAttempt, runSecretName } from '../../../src/core/names.ts';
import { record } from './builders.ts';

const base = {
  kind: 'TerraformMachine',
  name: 'm-a',
  op: 'apply',
  attempt: 1,
  inputsHash: 'h1',
  tick: '',
} as const;

describe('jobName: DESIGN.md section 9', () => {
  it('S9.1 captf-<c|m|mp>-<name>-<op>-a<attempt>-<hash6>', () => {
    expect(jobName(base)).toMatch(/^captf-m-m-a-apply-a1-[0-9a-f]{6}$/);
    expect(jobName({ ...base, kind: 'TerraformCluster' })).toMatch(/^captf-c-m-a-apply-a1-/);
    expect(jobName({ ...base, kind: 'TerraformMachinePool', op: 'refresh', attempt: 12 })).toMatch(
      /^captf-mp-m-a-refresh-a12-/,
    );
  });

  it('S9.2 at most 57 characters; a name too long becomes - and the first 16 hex of its SHA-256', () => {
    const fits = 'n'.repeat(57 - 'captf-m--refresh-a1-000000'.length);
    expect(jobName({ ...base, name: fits, op: 'refresh' })).toHaveLength(MAX_JOB_NAME_LENGTH);
    const long = `${fits}x`;
    const hashed = jobName({ ...base, name: long, op: 'refresh' });
    expect(hashed).toMatch(/^captf-m--[0-9a-f]{16}-refresh-a1-[0-9a-f]{6}$/);
    expect(hashed.length).toBeLessThanOrEqual(MAX_JOB_NAME_LENGTH);
    const longest = jobName({
      ...base,
      kind: 'TerraformMachinePool',
      name: 'x'.repeat(253),
      op: 'refresh',
      attempt: 999_999,
    });
    expect(longest.length).toBeLessThanOrEqual(MAX_JOB_NAME_LENGTH);
  });

  it('S9.3 hash6 covers inputs hash, op, attempt and tick; equal inputs give equal names (C02)', () => {
    expect(jobName(base)).toBe(jobName({ ...base }));
    const variants = [
      { ...base, inputsHash: 'h2' },
      { ...base, op: 'destroy' as const },
      { ...base, attempt: 2 },
      { ...base, tick: '2026-11-29T12:00:00.000Z' },
    ];
    for (const v of variants) expect(hash6(v)).not.toBe(hash6(base));
  });

  it('S9.4 attempt = 1 + the highest attempt among the retained Jobs of that op', () => {
    expect(nextAttempt([], 'apply')).toBe(1);
    const records = [
      record('apply', 'step-failed', 1, { attempt: 3 }),
      record('apply', 'step-failed', 2, { attempt: 5 }),
      record('drift', 'succeeded', 3, { attempt: 9 }),
    ];
    expect(nextAttempt(records, 'apply')).toBe(6);
    expect(nextAttempt(records, 'destroy')).toBe(1);
  });

  it('the per-run Secret is captf-run-<job>', () => {
    expect(runSecretName('captf-m-m-a-apply-a1-abcdef')).toBe('captf-run-captf-m-m-a-apply-a1-abcdef');
  });
});
