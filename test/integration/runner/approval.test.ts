import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testTempDir } from '../../env/temp-dir.ts';
import { localBackend, runRunner, stepNames } from './runner-process.ts';

// The destructive guard and the plan digest (DESIGN.md section 11), against the real tofu binary.

async function backend() {
  return localBackend(join(testTempDir('captf-runner-state-'), 'terraform.tfstate'));
}

describe('destructive guard and plan digests (DESIGN.md section 11)', () => {
  it('a destructive plan is blocked (exit 0: no failed Job, nothing applied); the same plan approved is applied', async () => {
    const state = await backend();
    const first = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a', generation: 1 }, backend: state },
    });
    expect(first.result.result).toBe('succeeded');

    // generation 2 replaces the machine: delete + create.
    const replace = { variables: { name: 'm-a', generation: 2 }, backend: state };
    const blocked = await runRunner({ flags: ['--op=apply'], module: 'machine', config: replace });
    // A plan that waits for a person is no failed Job (DESIGN.md section 10): exit 0.
    expect(blocked.exitCode).toBe(0);
    expect(blocked.result.result).toBe('blocked');
    expect(stepNames(blocked.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json']);
    expect(blocked.result.plan).toMatchObject({ add: 1, change: 0, destroy: 1, destructive: true });
    const digest = blocked.result.plan?.digest ?? '';

    // Nothing was applied: the machine still has its first ID.
    const refresh = await runRunner({ flags: ['--op=refresh'], module: 'machine', config: replace });
    expect(refresh.result.outputs?.providerID).toBe(first.result.outputs?.providerID);

    const approved = await runRunner({
      flags: ['--op=apply', `--expected-plan-digest=${digest}`],
      module: 'machine',
      config: replace,
    });
    expect(approved.exitCode).toBe(0);
    expect(approved.result.result).toBe('succeeded');
    expect(approved.result.plan?.digest).toBe(digest);
    expect(approved.result.outputs?.providerID).not.toBe(first.result.outputs?.providerID);
    expect(approved.result.outputs?.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.2' }]);
  });

  it('C18: an approval for one plan does not apply a changed plan: plan-changed (exit 0), nothing applied', async () => {
    const state = await backend();
    await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend: state },
    });
    const blocked = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a', generation: 2 }, backend: state },
    });
    const approvedDigest = blocked.result.plan?.digest ?? '';
    expect(blocked.result.result).toBe('blocked');

    // The inputs change before the approved apply runs (approval in the run config this time).
    const changed = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: {
        variables: { name: 'm-b', generation: 3 },
        backend: state,
        expectedPlanDigest: approvedDigest,
      },
    });
    expect(changed.exitCode).toBe(0);
    expect(changed.result.result).toBe('plan-changed');
    expect(changed.result.plan?.digest).not.toBe(approvedDigest);
    expect(changed.result.plan?.destructive).toBe(true);
    expect(stepNames(changed.result)).not.toContain('apply');

    const drift = await runRunner({
      flags: ['--op=drift'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend: state },
    });
    expect(drift.result.drift).toEqual({ detected: false });
  });

  it('Manual policy: an in-place change waits for approval; Automatic applies it without one', async () => {
    const state = await backend();
    await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend: state },
    });
    const update = { variables: { name: 'm-b' }, backend: state };
    const manual = await runRunner({
      flags: ['--op=apply', '--apply-policy=Manual'],
      module: 'machine',
      config: update,
    });
    expect(manual.result.result).toBe('blocked');
    expect(manual.result.plan).toMatchObject({ add: 0, change: 1, destroy: 0, destructive: false });
    const automatic = await runRunner({ flags: ['--op=apply'], module: 'machine', config: update });
    expect(automatic.result.result).toBe('succeeded');
    expect(automatic.result.plan?.digest).toBe(manual.result.plan?.digest);
  });

  it('a plan with no changes needs no approval, even under the Manual policy', async () => {
    const state = await backend();
    const config = { variables: { name: 'm-a' }, backend: state, applyPolicy: 'Manual' as const };
    const first = await runRunner({ flags: ['--op=apply'], module: 'machine', config });
    expect(first.result.result).toBe('blocked');
    const approved = await runRunner({
      flags: ['--op=apply', `--expected-plan-digest=${first.result.plan?.digest}`],
      module: 'machine',
      config,
    });
    expect(approved.result.result).toBe('succeeded');
    const again = await runRunner({ flags: ['--op=apply'], module: 'machine', config });
    expect(again.exitCode).toBe(0);
    expect(again.result).toMatchObject({ result: 'succeeded', plan: { add: 0, change: 0, destroy: 0 } });
  });

  it('a Cluster API machine: a plan that changes its providerID is refused before apply (ProviderIDChange), even approved', async () => {
    const state = await backend();
    const first = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { kind: 'TerraformMachine', variables: { name: 'm-a' }, backend: state },
    });
    const providerID = String(first.result.outputs?.providerID ?? '');
    expect(providerID).toMatch(/^captf-test:\/\//);
    const replace = {
      kind: 'TerraformMachine' as const,
      variables: { name: 'm-a', generation: 2 },
      backend: state,
      providerID,
    };
    const refused = await runRunner({ flags: ['--op=apply'], module: 'machine', config: replace });
    expect(refused.result.result).toBe('failed');
    expect(refused.result.error).toMatchObject({
      kind: 'step',
      step: 'show-json',
      reason: 'ProviderIDChange',
    });
    expect(refused.result.error?.summary).toContain(providerID);
    expect(stepNames(refused.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json']);
    // An approval does not get past it: the digest of that very plan is refused the same way.
    const approved = await runRunner({
      flags: ['--op=apply', `--expected-plan-digest=${refused.result.plan?.digest ?? ''}`],
      module: 'machine',
      config: replace,
    });
    expect(approved.result.error?.reason).toBe('ProviderIDChange');
    // Nothing was applied; an in-place change (the name) keeps the providerID and applies.
    const inPlace = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { ...replace, variables: { name: 'm-a2' } },
    });
    expect(inPlace.result).toMatchObject({ result: 'succeeded', outputs: { providerID } });
  });

  it('the digest depends on the per-object key: the same plan under another key has another digest', async () => {
    const state = await backend();
    const config = { variables: { name: 'm-a' }, backend: state, applyPolicy: 'Manual' as const };
    const a = await runRunner({ flags: ['--op=apply'], module: 'machine', config });
    const b = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { ...config, planHmacKey: 'another-object-key-0123456789abcdef' },
    });
    expect(a.result.plan?.add).toBe(1);
    expect(b.result.plan?.add).toBe(1);
    expect(b.result.plan?.digest).not.toBe(a.result.plan?.digest);
  });
});
