import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { moduleInputsOf } from '../../../src/core/module-inputs.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import { localBackend, runRunner, stepNames } from './runner-process.ts';

// Issue 23 item 11, against the real tofu binary: what the module contract owes Cluster API besides its
// inputs (docs/module-contract.md). The run configs carry what src/core builds for them.

async function backend() {
  return localBackend(join(testTempDir('captf-runner-state-'), 'terraform.tfstate'));
}

const machine = { kind: 'TerraformMachine' as const, namespace: 'team-a', name: 'md-0-abc12-infra' };

describe('the Cluster API contract in the runner', () => {
  it('a Cluster API cluster: a plan that changes its controlPlaneEndpoint is refused before apply (ControlPlaneEndpointChange), even approved; one that keeps it applies', async () => {
    const state = await backend();
    const first = await runRunner({
      flags: ['--op=apply'],
      module: 'cluster',
      config: { kind: 'TerraformCluster', variables: { host: 'cp.demo.example' }, backend: state },
    });
    expect(first.result.result).toBe('succeeded');
    const endpoint = first.result.outputs?.controlPlaneEndpoint as { host: string; port: number };
    expect(endpoint).toEqual({ host: 'cp.demo.example', port: 6443 });

    const moved = {
      kind: 'TerraformCluster' as const,
      variables: { host: 'cp2.demo.example' },
      backend: state,
      controlPlaneEndpoint: endpoint,
    };
    const refused = await runRunner({ flags: ['--op=apply'], module: 'cluster', config: moved });
    expect(refused.result.result).toBe('failed');
    expect(refused.result.error).toMatchObject({
      kind: 'step',
      step: 'show-json',
      reason: 'ControlPlaneEndpointChange',
    });
    expect(refused.result.error?.summary).toContain('cp.demo.example:6443');
    expect(stepNames(refused.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json']);
    // An approval does not get past it: the digest of that very plan is refused the same way.
    const approved = await runRunner({
      flags: ['--op=apply', `--expected-plan-digest=${refused.result.plan?.digest ?? ''}`],
      module: 'cluster',
      config: moved,
    });
    expect(approved.result.error?.reason).toBe('ControlPlaneEndpointChange');
    // Nothing was applied; a change elsewhere keeps the endpoint and applies.
    const kept = await runRunner({
      flags: ['--op=apply'],
      module: 'cluster',
      config: { ...moved, variables: { host: 'cp.demo.example', note: 'resized' } },
    });
    expect(kept.result).toMatchObject({ result: 'succeeded', outputs: { controlPlaneEndpoint: endpoint } });
    // Without the latch (a standalone cluster) the same change applies and the endpoint follows it.
    const standalone = await runRunner({
      flags: ['--op=apply'],
      module: 'cluster',
      config: { kind: 'TerraformCluster', variables: { host: 'cp2.demo.example' }, backend: state },
    });
    expect(standalone.result.outputs?.controlPlaneEndpoint).toEqual({ host: 'cp2.demo.example', port: 6443 });
  });

  it('a machine whose module has no default for bootstrap_data is destroyed once its bootstrap Secret is gone', async () => {
    const state = await backend();
    const owner = { kind: 'Machine' as const, name: 'md-0-abc12-x7k2p', controlPlane: false };
    const withData = moduleInputsOf({
      ref: machine,
      capi: {
        expectsOwner: false,
        clusterInfrastructureProvisioned: true,
        owner: { ...owner, bootstrapDataSecretName: 'md-0-abc12-x7k2p' },
        bootstrapData: { value: '#cloud-config\n', format: 'cloud-config' },
      },
      op: 'apply',
    });
    const applied = await runRunner({
      flags: ['--op=apply'],
      module: 'bootstrap-machine',
      config: {
        kind: 'TerraformMachine',
        backend: state,
        contractInputs: withData.values as never,
        sensitiveContractInputs: withData.sensitive,
      },
    });
    expect(applied.result.result).toBe('succeeded');

    // Cluster API deleted the Machine's bootstrap config and its Secret: the owner names none readable.
    const gone = { expectsOwner: false, clusterInfrastructureProvisioned: true, owner };
    const destroyInputs = (op: 'apply' | 'destroy') => moduleInputsOf({ ref: machine, capi: gone, op });
    // What the destroy got before this rule (the inputs of any other op): OpenTofu refuses to start.
    const without = await runRunner({
      flags: ['--op=destroy'],
      module: 'bootstrap-machine',
      config: {
        kind: 'TerraformMachine',
        backend: state,
        contractInputs: destroyInputs('apply').values as never,
      },
    });
    expect(without.result.result).toBe('failed');
    expect(without.result.error?.summary).toContain('bootstrap_data');

    const destroyed = await runRunner({
      flags: ['--op=destroy'],
      module: 'bootstrap-machine',
      config: {
        kind: 'TerraformMachine',
        backend: state,
        contractInputs: destroyInputs('destroy').values as never,
      },
    });
    expect(destroyed.result.result).toBe('succeeded');
    expect(stepNames(destroyed.result)).toContain('destroy');
  });
});
