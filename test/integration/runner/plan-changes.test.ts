import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlanChangesSchema } from '../../../src/schemas/plan-changes.ts';
import { readPlanChangesLog } from '../../../src/schemas/plan-changes-log.ts';
import { testTempDir } from '../../env/temp-dir.ts';
import { localBackend, runRunner, stepNames } from './runner-process.ts';

// The readable plan (issue 24 item 1) from a real OpenTofu plan of hundreds of resources, with a secret in
// every place one could show (test/fixtures/modules/large-plan): a sensitive variable, a Secret-fed
// variable the module does not mark sensitive (as an attribute, a map key, a for_each key and a
// non-sensitive output) and the bootstrap data. The runner prints it in its log for the controller.

const CANARY = 'tok-123-canary';

function config(round: 1 | 2, statePath: string) {
  return {
    variables: {
      size: round === 1 ? 300 : 290,
      generation: round,
      label: round === 1 ? 'a' : 'b',
      token: `${CANARY}-token${round}`,
      password: `${CANARY}-password${round}`,
    },
    // What the controller marks for variables read from Secrets (spec.variablesFrom).
    secretInputs: ['token', 'password'],
    contractInputs: { bootstrap_data: `#cloud-config\n# ${CANARY}-bootstrap${round}\n` },
    sensitiveContractInputs: ['bootstrap_data'],
    backend: localBackend(statePath),
  };
}

describe('the readable plan of a blocked apply, from a real plan of 303 changes', () => {
  it('is printed last, decodes to exact counts and OpenTofu words, and holds no secret anywhere', async () => {
    const state = join(testTempDir('captf-runner-plan-'), 'terraform.tfstate');
    const first = await runRunner({ flags: ['--op=apply'], module: 'large-plan', config: config(1, state) });
    expect(first.result.result).toBe('succeeded');
    // An apply that goes ahead prints no readable plan: no TerraformPlan is made for it.
    expect(readPlanChangesLog(first.stdout)).toMatchObject({ ok: false, reason: 'absent' });

    const blocked = await runRunner({
      flags: ['--op=apply'],
      module: 'large-plan',
      config: config(2, state),
    });
    expect(blocked.result.result).toBe('blocked');
    expect(stepNames(blocked.result)).toEqual(['prepare', 'init', 'validate', 'plan', 'show-json']);
    const read = readPlanChangesLog(blocked.stdout);
    if (!read.ok) throw new Error(read.message);
    const { changes } = read;
    expect(PlanChangesSchema.safeParse(changes).success).toBe(true);
    expect(changes.counts).toEqual({
      resources: 303,
      create: 1,
      update: 288,
      delete: 11,
      replace: 3,
      read: 0,
      forget: 0,
      outputs: 3,
    });
    expect(changes.omittedResources).toBe(0);
    // The counts agree with the digest's own (a replace is one add and one destroy).
    expect(blocked.result.plan).toMatchObject({ add: 4, change: 288, destroy: 14, destructive: true });
    expect(changes.destructive.slice(0, 4)).toEqual([
      'terraform_data.keyed[(sensitive value)]',
      'terraform_data.node[0]',
      'terraform_data.node[1]',
      'terraform_data.node[2]',
    ]);
    expect(changes.resources.find((r) => r.address === 'terraform_data.secret')).toEqual({
      address: 'terraform_data.secret',
      action: 'update',
      // `input` reads Secret-fed variables: its keys could be their values, so the path stops there.
      paths: ['input', 'output'],
    });
    // The for_each key was the token: masked by the readable plan itself, not by the log's redactor.
    expect(JSON.stringify(changes)).not.toContain('[redacted]');

    // Nothing of the plan lines, the result or the readable plan holds a secret, current or previous.
    const planLines = blocked.stdout.split('\n').filter((line) => line.startsWith('captf-plan-changes '));
    expect(planLines.length).toBeGreaterThan(0);
    for (const text of [planLines.join('\n'), blocked.resultText, JSON.stringify(changes)])
      expect(text).not.toContain(CANARY);
    // The run's current secrets are nowhere in its output. (OpenTofu's own progress lines name the old
    // instance `keyed["…-token1"]`, a value no redactor of this run knows: a limit of the log, not of the
    // TerraformPlan.)
    for (const secret of ['token2', 'password2', 'bootstrap2'])
      for (const text of [blocked.stdout, blocked.stderr]) expect(text).not.toContain(`${CANARY}-${secret}`);
  });
});
