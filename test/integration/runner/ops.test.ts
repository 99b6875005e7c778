import { access, chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REDACTED } from '../../../src/core/redaction.ts';
import { RESULT_MAX_BYTES } from '../../../src/schemas/result.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import { localBackend, runRunner, stepNames } from './runner-process.ts';

// The runner as a process against the real tofu binary, local backend (state file outside the work dir).

async function statePath(): Promise<string> {
  return join(testTempDir('captf-runner-state-'), 'terraform.tfstate');
}

describe('runner ops (DESIGN.md section 10)', () => {
  it('apply: prepare, init, validate, plan, show-json, apply; succeeded, exit 0, plan and contract outputs', async () => {
    const state = await statePath();
    const run = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend: localBackend(state) },
    });
    expect(run.exitCode).toBe(0);
    expect(run.result.result).toBe('succeeded');
    expect(stepNames(run.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json', 'apply']);
    expect(run.result.steps.every((s) => s.exit === 0 && s.seconds >= 0)).toBe(true);
    expect(run.result.plan).toMatchObject({ add: 1, change: 0, destroy: 0, destructive: false });
    expect(run.result.plan?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(run.result.outputs?.providerID).toMatch(/^captf-test:\/\/[0-9a-f-]{36}$/);
    expect(run.result.outputs?.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.1' }]);
    await access(state);
  });

  it('drift: no changes after an apply -> detected false; changed inputs -> detected true, exit 0 (tofu exit 2)', async () => {
    const state = await statePath();
    const backend = localBackend(state);
    await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });

    const clean = await runRunner({
      flags: ['--op=drift'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });
    expect(clean.exitCode).toBe(0);
    expect(stepNames(clean.result)).toEqual(['prepare', 'init', 'plan']);
    expect(clean.result).toMatchObject({ result: 'succeeded', drift: { detected: false } });
    expect(clean.result.steps[2]?.exit).toBe(0);

    const drifted = await runRunner({
      flags: ['--op=drift'],
      module: 'machine',
      config: { variables: { name: 'm-b' }, backend },
    });
    expect(drifted.exitCode).toBe(0);
    expect(drifted.result).toMatchObject({
      result: 'succeeded',
      drift: { detected: true, add: 0, change: 1, destroy: 0 },
    });
    expect(drifted.result.steps[2]?.exit).toBe(2);
  });

  it('refresh: init, apply-refresh-only; succeeded with the contract outputs', async () => {
    const state = await statePath();
    const backend = localBackend(state);
    const applied = await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });
    const run = await runRunner({
      flags: ['--op=refresh'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });
    expect(run.exitCode).toBe(0);
    expect(stepNames(run.result)).toEqual(['prepare', 'init', 'apply-refresh-only']);
    expect(run.result.result).toBe('succeeded');
    expect(run.result.outputs?.providerID).toBe(applied.result.outputs?.providerID);
  });

  it('destroy: init, destroy; succeeded; a drift check afterwards plans the machine again', async () => {
    const state = await statePath();
    const backend = localBackend(state);
    await runRunner({
      flags: ['--op=apply'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });
    const run = await runRunner({
      flags: ['--op=destroy'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });
    expect(run.exitCode).toBe(0);
    expect(stepNames(run.result)).toEqual(['prepare', 'init', 'destroy']);
    expect(run.result.result).toBe('succeeded');
    const after = await runRunner({
      flags: ['--op=drift'],
      module: 'machine',
      config: { variables: { name: 'm-a' }, backend },
    });
    expect(after.result.drift).toMatchObject({ detected: true, add: 1 });
  });
});

describe('a failing module: kind step, the right step, a curated summary, no secret anywhere (C15)', () => {
  const CANARY = 'tok-123-canary';
  const rows: {
    id: string;
    name: string;
    variables: Record<string, string | number>;
    summary: RegExp;
    quoted: boolean;
  }[] = [
    {
      id: 'validation',
      name: 'a variable validation rule quoting the secret rejects it at plan',
      variables: { token: CANARY },
      summary: /^Invalid value for variable .*token \[redacted\] is not an ok- token/,
      quoted: true,
    },
    {
      id: 'precondition',
      name: 'a terraform_data precondition quoting the secret fails at plan',
      variables: { token: `ok-${CANARY}`, size: 12 },
      summary: /^Resource precondition failed .*size 12 is too big for \[redacted\]/,
      quoted: true,
    },
    {
      id: 'type',
      name: 'a value of the wrong type quoted from the generated variables file fails at plan',
      variables: { token: 'ok-1', size: CANARY },
      summary: /^Invalid value for input variable/,
      quoted: false,
    },
  ];
  it.each(rows)('C15 $id: $name', async ({ variables, summary, quoted }) => {
    const run = await runRunner({
      flags: ['--op=apply'],
      module: 'checks',
      config: { variables, secretInputs: ['token', 'size'] },
    });
    expect(run.exitCode).toBe(1);
    expect(run.result.result).toBe('failed');
    expect(run.result.error).toMatchObject({ kind: 'step', step: 'plan' });
    expect(run.result.error?.summary).toMatch(summary);
    expect(new TextEncoder().encode(run.result.error?.summary).length).toBeLessThanOrEqual(512);
    expect(run.result.steps.at(-1)).toMatchObject({ name: 'plan', exit: 1 });
    for (const text of [run.resultText, run.stdout, run.stderr]) expect(text).not.toContain(CANARY);
    // Where the module's message quotes the secret, the runner printed it redacted: the absence above is
    // redaction, not silence.
    if (quoted) expect(run.stdout).toContain(REDACTED);
  });
});

describe('image layout (docs/image-contract.md)', () => {
  it('a missing module directory fails at prepare with kind image-layout, before any runtime step', async () => {
    const run = await runRunner({ flags: ['--op=apply'], module: '/captf-test/does-not-exist', config: {} });
    expect(run.exitCode).toBe(1);
    expect(run.result.error).toMatchObject({ kind: 'image-layout', step: 'prepare' });
    expect(run.result.error?.summary).toContain('/captf-test/does-not-exist does not exist');
    expect(stepNames(run.result)).toEqual(['prepare']);
  });

  it('a runtime that is not executable fails at prepare with kind image-layout', async () => {
    const dir = testTempDir('captf-runner-runtime-');
    const runtime = join(dir, 'runtime');
    await writeFile(runtime, 'not a binary');
    await chmod(runtime, 0o644);
    const run = await runRunner({ flags: ['--op=drift'], module: 'machine', runtime, config: {} });
    expect(run.exitCode).toBe(1);
    expect(run.result.error).toMatchObject({ kind: 'image-layout', step: 'prepare' });
    expect(run.result.error?.summary).toBe(`runtime ${runtime} is not executable`);
  });

  it('an executable file that is not a binary fails at prepare with kind image-layout', async () => {
    const dir = testTempDir('captf-runner-runtime-');
    const runtime = join(dir, 'runtime');
    await writeFile(runtime, '\u0000\u0001 not an executable format');
    await chmod(runtime, 0o755);
    const run = await runRunner({ flags: ['--op=drift'], module: 'machine', runtime, config: {} });
    expect(run.exitCode).toBe(1);
    expect(run.result.error).toMatchObject({ kind: 'image-layout', step: 'prepare' });
    expect(run.result.error?.summary).toBe(`runtime ${runtime} is not an ELF executable`);
  });

  it('an ELF runtime the kernel refuses (wrong architecture) fails at init with kind image-layout', async () => {
    const dir = testTempDir('captf-runner-runtime-');
    const runtime = join(dir, 'runtime');
    // An ELF header for a machine this host is not: execve says ENOEXEC.
    const header = Buffer.alloc(64);
    Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(header);
    header.writeUInt16LE(2, 16); // ET_EXEC
    header.writeUInt16LE(0x5a5a, 18); // no such machine
    await writeFile(runtime, header);
    await chmod(runtime, 0o755);
    const run = await runRunner({ flags: ['--op=drift'], module: 'machine', runtime, config: {} });
    expect(run.exitCode).toBe(1);
    expect(run.result.error).toMatchObject({ kind: 'image-layout', step: 'init' });
    // The C library hands the refused file to /bin/sh (this machine has one), which exits 126 or 127.
    expect(run.result.error?.summary).toMatch(/could not be executed \(exit 12[67]\)$/);
  });
});

describe('result size (DESIGN.md section 10)', () => {
  it('C10: outputs that would exceed 4096 bytes are dropped in the fixed order; the result fits and parses', async () => {
    const run = await runRunner({
      flags: ['--op=apply'],
      module: 'large-outputs',
      // A pool: its CRD records providerIDList and replicas; the machine-only addresses go unchecked.
      config: { kind: 'TerraformMachinePool', variables: { replicas: 120 } },
    });
    expect(run.exitCode).toBe(0);
    expect(new TextEncoder().encode(run.resultText).length).toBeLessThanOrEqual(RESULT_MAX_BYTES);
    expect(run.result.result).toBe('succeeded');
    expect(run.result.dropped).toEqual(['outputs.addresses', 'outputs.providerIDList']);
    expect(run.result.outputs).toEqual({
      replicas: 120,
      controlPlaneEndpoint: { host: 'pool.captf.test', port: 6443 },
    });
    expect(run.result.plan?.add).toBe(1);
  });
});
