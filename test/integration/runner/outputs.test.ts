import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testTempDir } from '../../env/temp-dir.ts';
import { localBackend, runRunner } from './runner-process.ts';

// The contract outputs as the runner reports them (issue 10, defect classes 2 and 3), against real tofu:
// secret values are cut from free text, never from the outputs; an output the CRD would refuse fails the
// run with OutputsInvalid, naming the output.

async function statePath(): Promise<string> {
  return join(testTempDir('captf-runner-outputs-'), 'terraform.tfstate');
}

describe('runner contract outputs', () => {
  it('class 2, redaction that corrupts data: a providerID and an address containing a secret input arrive intact', async () => {
    const run = await runRunner({
      flags: ['--op=apply'],
      module: 'cloud-machine',
      config: {
        kind: 'TerraformMachine',
        variables: { region: 'us-east-1' },
        secretInputs: ['region'],
        backend: localBackend(await statePath()),
      },
    });
    expect(run.exitCode).toBe(0);
    expect(run.result.outputs).toEqual({
      providerID: 'aws:///us-east-1a/i-0abc',
      addresses: [{ type: 'InternalDNS', address: 'ip-10-0-0-1.us-east-1.compute.internal' }],
    });
  });

  it('class 3, a rejected write freezes an object: an output the CRD would refuse fails the run with OutputsInvalid naming it', async () => {
    const run = await runRunner({
      flags: ['--op=apply'],
      module: 'cloud-machine',
      config: {
        kind: 'TerraformMachine',
        variables: { region: 'us-east-1', address_type: 'Bogus' },
        backend: localBackend(await statePath()),
      },
    });
    expect(run.exitCode).toBe(1);
    expect(run.result).toMatchObject({ result: 'failed', error: { kind: 'step', reason: 'OutputsInvalid' } });
    expect(run.result.error?.summary).toContain('addresses');
  });
});
