import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { bashBlocks, blockOf, type RunbookShell, runbookShell } from '../../env/runbook.ts';
import { createObject, createSecret, createStepEnv, readObject, type StepEnv } from '../step/harness.ts';

// The runbooks the alerts link (infra/monitoring/prometheusrule.yaml `runbook_url`) as tests: every
// ```bash block of docs/runbooks/drift.md and docs/runbooks/secret-size-limits.md runs as written against
// objects on the real API server whose status and Secrets show what the alert saw (no controller runs here:
// the status is written as a step would). failing-jobs.md has its own end-to-end test
// (test/e2e/runbook-failing-jobs.test.ts).

const RUNBOOKS = join(import.meta.dirname, '..', '..', '..', 'docs', 'runbooks');
const drift = bashBlocks(readFileSync(join(RUNBOOKS, 'drift.md'), 'utf8'));
const sizes = bashBlocks(readFileSync(join(RUNBOOKS, 'secret-size-limits.md'), 'utf8'));

let env: StepEnv;
let shell: RunbookShell;

/** Writes the object's status as a step would (the status subresource). */
async function writeStatus(kind: 'TerraformCluster' | 'TerraformMachine', name: string, status: object) {
  await env.custom.patchNamespacedCustomObjectStatus(
    { ...CUSTOM_RESOURCES[kind], namespace: env.namespace, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

beforeAll(async () => {
  env = await createStepEnv('runbooks');
  shell = runbookShell();
});

afterAll(async () => {
  shell?.close();
  await env?.close();
});

describe('docs/runbooks/drift.md', () => {
  const vars = () => ({ NS: env.namespace, KIND: 'terraformcluster', NAME: 'drifting' });

  beforeAll(async () => {
    await createObject(env, 'TerraformCluster', 'drifting');
    await createObject(env, 'TerraformCluster', 'steady');
    const now = new Date().toISOString();
    const condition = (status: 'True' | 'False', reason: string, message: string) => ({
      type: 'DriftDetected',
      status,
      reason,
      message,
      lastTransitionTime: now,
    });
    await writeStatus('TerraformCluster', 'drifting', {
      stateSuffix: 'c-drifting',
      lastSuccess: { apply: now, drift: now },
      conditions: [
        condition('True', 'DriftDetected', 'the drift check plans 0 to add, 2 to change, 0 to destroy'),
      ],
    });
    await writeStatus('TerraformCluster', 'steady', {
      stateSuffix: 'c-steady',
      lastSuccess: { apply: now, drift: now },
      conditions: [condition('False', 'DriftResolved', 'no changes')],
    });
  });

  it('step 1 shows what the check found, and lists the drifting objects of the fleet (not the steady one)', async () => {
    const found = JSON.parse((await shell.run(blockOf(drift, 'Step 1', 0), vars())).stdout) as {
      drift: { status: string; message: string };
      action: string;
    };
    expect(found.drift).toMatchObject({ status: 'True', message: expect.stringContaining('2 to change') });
    expect(found.action).toBe('Report');
    const fleet = (await shell.run(blockOf(drift, 'Step 1', 1), vars())).stdout
      .split('\n')
      .filter((line) => line.includes(`${env.namespace}/`));
    expect(fleet).toEqual([`TerraformCluster\t${env.namespace}/drifting`]);
  });

  it('step 2 turns remediation on', async () => {
    await shell.run(blockOf(drift, 'Step 2', 0), vars());
    const object = await readObject(env, {
      kind: 'TerraformCluster',
      namespace: env.namespace,
      name: 'drifting',
    });
    expect((object.spec as { driftCheck?: { action?: string } }).driftCheck?.action).toBe('Remediate');
  });
});

describe('docs/runbooks/secret-size-limits.md', () => {
  const vars = () => ({ NS: env.namespace, KIND: 'terraformmachine', NAME: 'm-big' });

  beforeAll(async () => {
    await createSecret(env, 'big-inputs', { certificate: 'c'.repeat(3000) });
    await createObject(env, 'TerraformMachine', 'm-big', {
      variables: { blob: 'x'.repeat(5000), count: 3 },
      variablesFrom: [{ name: 'certificate', secretKeyRef: { name: 'big-inputs', key: 'certificate' } }],
    });
    await writeStatus('TerraformMachine', 'm-big', { stateSuffix: 'm-m-big' });
    // The state as the kubernetes backend writes it: gzip'd JSON under `tfstate`.
    const instances = (n: number) => Array.from({ length: n }, (_, i) => ({ attributes: { id: `i${i}` } }));
    const state = {
      version: 4,
      serial: 3,
      lineage: 'l',
      outputs: {},
      resources: [
        { mode: 'managed', type: 'terraform_data', name: 'disk', instances: instances(3) },
        { mode: 'managed', type: 'terraform_data', name: 'node', instances: instances(1) },
      ],
    };
    await env.core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        metadata: { name: 'tfstate-default-m-m-big' },
        data: { tfstate: gzipSync(Buffer.from(JSON.stringify(state))).toString('base64') },
      },
    });
  });

  it("the state: the Secret's size, and the resource types that take the room (no values)", async () => {
    const { stdout } = await shell.run(blockOf(sizes, 'The state near the limit'), vars());
    const [summary, ...rest] = stdout.split('\n}\n');
    const size = JSON.parse(`${summary}}`) as { secret: string; bytes: number };
    expect(size.secret).toBe('tfstate-default-m-m-big');
    expect(size.bytes).toBeGreaterThan(50);
    expect(rest.join('\n').trim().split('\n')).toEqual(['terraform_data\t3', 'terraform_data\t1']);
    expect(stdout).not.toContain('i0');
  });

  it('the run inputs: the largest variables, the variablesFrom entries, and the size of each key they read', async () => {
    const inputs = JSON.parse(
      (await shell.run(blockOf(sizes, 'The run inputs near the limit', 0), vars())).stdout,
    ) as {
      variablesBytes: number;
      largestVariables: { name: string; bytes: number }[];
      variablesFrom: string[];
    };
    expect(inputs.largestVariables[0]).toEqual({ name: 'blob', bytes: 5002 });
    expect(inputs.variablesBytes).toBeGreaterThan(5000);
    expect(inputs.variablesFrom).toEqual(['certificate <- big-inputs/certificate']);
    const keys = (await shell.run(blockOf(sizes, 'The run inputs near the limit', 1), vars())).stdout;
    expect(keys.trim()).toBe('big-inputs/certificate\t3000');
  });
});
