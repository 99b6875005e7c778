import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { jobName, MAX_JOB_NAME_LENGTH } from '../../../src/core/names.ts';
import { planName } from '../../../src/core/plan-manifest.ts';
import { API_VERSION } from '../../../src/schemas/kinds/api-group.ts';
import { parseDurationSeconds } from '../../../src/schemas/kinds/duration.ts';
import {
  JOBS_POLICY_DEFAULTS,
  JobsPolicySchema,
  jobsPolicyProblems,
  resolveJobsPolicy,
} from '../../../src/schemas/kinds/jobs-policy.ts';
import { KIND_DEFINITIONS } from '../../../src/schemas/kinds/registry.ts';
import { approveOnlyPending, MAX_TARGET_NAME_LENGTH } from '../../../src/schemas/kinds/rules.ts';
import { TerraformClusterSchema } from '../../../src/schemas/kinds/terraform-cluster.ts';
import {
  TerraformMachineSchema,
  TerraformMachineSpecSchema,
} from '../../../src/schemas/kinds/terraform-machine.ts';
import { TerraformMachinePoolSchema } from '../../../src/schemas/kinds/terraform-machine-pool.ts';
import { TerraformPlanSpecSchema } from '../../../src/schemas/kinds/terraform-plan.ts';

const samples = join(import.meta.dirname, '..', '..', '..', 'infra', 'samples');

function issues(result: {
  success: boolean;
  error?: { issues: { path: PropertyKey[]; message: string }[] };
}): string[] {
  return (result.error?.issues ?? []).map((i) => `${i.path.map(String).join('.')}: ${i.message}`);
}

const machine = (spec: object) => TerraformMachineSpecSchema.safeParse({ source: { image: 'm:1' }, ...spec });

describe('samples (infra/samples)', () => {
  it('the TerraformCluster sample validates', () => {
    const [doc] = parseAllDocuments(readFileSync(join(samples, 'terraform-cluster.yaml'), 'utf8'));
    expect(issues(TerraformClusterSchema.safeParse(doc?.toJS()))).toEqual([]);
  });

  it('both TerraformMachine samples validate', () => {
    const docs = parseAllDocuments(readFileSync(join(samples, 'terraform-machines.yaml'), 'utf8'));
    expect(docs).toHaveLength(2);
    for (const doc of docs) expect(issues(TerraformMachineSchema.safeParse(doc.toJS()))).toEqual([]);
  });
});

describe('spec defaults and limits: DESIGN.md section 2', () => {
  it('applyPolicy Automatic, drift checks enabled with action Report (30m when no schedule)', () => {
    const parsed = machine({});
    expect(parsed.data).toMatchObject({
      applyPolicy: 'Automatic',
      driftCheck: { enabled: true, action: 'Report' },
    });
  });

  it('Job policy defaults: deadline 3600, lock timeout 300, histories 3/3, 250m/512Mi, 2Gi, no CPU limit', () => {
    expect(resolveJobsPolicy(undefined)).toEqual(JOBS_POLICY_DEFAULTS);
    expect(JOBS_POLICY_DEFAULTS).toMatchObject({
      activeDeadlineSeconds: 3600,
      lockTimeoutSeconds: 300,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '2Gi' } },
    });
  });

  it.each([
    { field: 'activeDeadlineSeconds', value: 0, ok: false },
    { field: 'activeDeadlineSeconds', value: 1, ok: true },
    { field: 'activeDeadlineSeconds', value: 86_400, ok: true },
    { field: 'activeDeadlineSeconds', value: 86_401, ok: false },
    { field: 'lockTimeoutSeconds', value: 0, ok: true },
    { field: 'lockTimeoutSeconds', value: 3601, ok: false },
    { field: 'failedJobsHistoryLimit', value: 0, ok: false },
    { field: 'failedJobsHistoryLimit', value: 1, ok: true },
    { field: 'successfulJobsHistoryLimit', value: 0, ok: true },
    { field: 'activeDeadlineSeconds', value: 1.5, ok: false },
  ])('jobs.$field = $value → valid: $ok', ({ field, value, ok }) => {
    expect(JobsPolicySchema.safeParse({ [field]: value }).success).toBe(ok);
  });

  it('durations: 30m, 1h30m, 90s; no unit or zero is rejected', () => {
    expect([parseDurationSeconds('30m'), parseDurationSeconds('1h30m'), parseDurationSeconds('90s')]).toEqual(
      [1800, 5400, 90],
    );
    expect(issues(machine({ refresh: { interval: '30' } }))[0]).toContain('use a duration such as 30m');
    expect(machine({ refresh: { interval: '0s' } }).success).toBe(false);
  });

  it.each([
    { field: 'driftCheck', interval: '0s', valid: false },
    { field: 'driftCheck', interval: '59s', valid: false },
    { field: 'driftCheck', interval: '1m', valid: true },
    { field: 'driftCheck', interval: '30s30s', valid: true },
    { field: 'driftCheck', interval: '8760h', valid: true },
    { field: 'driftCheck', interval: '8760h1s', valid: false },
    { field: 'refresh', interval: '10s', valid: false },
    { field: 'refresh', interval: '1h', valid: true },
    { field: 'refresh', interval: '999999h', valid: false },
  ])('$field.interval $interval → valid: $valid (1m to 8760h)', ({ field, interval, valid }) => {
    const result = machine({ [field]: { interval } });
    expect(result.success).toBe(valid);
    if (!valid && interval !== '999999h') {
      expect(issues(result)[0]).toContain(`${interval} must be between 1m and 8760h`);
    }
  });
});

describe('cross-field rules: messages a person can act on', () => {
  it('lockTimeoutSeconds must be below activeDeadlineSeconds', () => {
    expect(issues(machine({ jobs: { activeDeadlineSeconds: 300, lockTimeoutSeconds: 300 } }))).toEqual([
      'jobs.lockTimeoutSeconds: lockTimeoutSeconds (300) must be below activeDeadlineSeconds (300): a Job waiting for the state lock would be killed before it runs; lower lockTimeoutSeconds or raise activeDeadlineSeconds',
    ]);
    expect(machine({ jobs: { activeDeadlineSeconds: 301, lockTimeoutSeconds: 300 } }).success).toBe(true);
  });

  it.each(['TF_LOG', 'TF_VAR_token', 'KUBE_CONFIG_PATH'])('env name %s is rejected, naming it', (name) => {
    const found = issues(
      machine({
        jobs: {
          env: [
            { name: 'OK', value: 'v' },
            { name, value: 'v' },
          ],
        },
      }),
    );
    expect(found).toEqual([
      `jobs.env.1.name: env name ${name} is reserved (TF_ and KUBE_ belong to the runner, except TF_TOKEN_<host>); pass Terraform inputs through spec.variables and backend settings through spec.backend`,
    ]);
  });

  it('TF_TOKEN_<host> from a Secret is the one TF_ name admitted (issue 25 item 3)', () => {
    const token = (valueFrom: Record<string, unknown> | undefined, value?: string) =>
      machine({
        jobs: {
          env: [
            {
              name: 'TF_TOKEN_registry_example_com',
              ...(value !== undefined ? { value } : {}),
              ...(valueFrom ? { valueFrom } : {}),
            },
          ],
        },
      });
    expect(token({ secretKeyRef: { name: 'registry', key: 'token' } }).success).toBe(true);
    const fromSecretOnly =
      'jobs.env.0.valueFrom: a TF_TOKEN_<host> registry token takes its value from a Secret only: set valueFrom.secretKeyRef, and neither value nor valueFrom.configMapKeyRef';
    expect(issues(token(undefined, 'literal-token'))).toEqual([fromSecretOnly]);
    expect(issues(token({ configMapKeyRef: { name: 'c', key: 'k' } }))).toEqual([fromSecretOnly]);
    // Only host characters after the prefix; any other TF_ name stays reserved.
    const dotted = machine({
      jobs: { env: [{ name: 'TF_TOKEN_a.b', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
    });
    expect(issues(dotted)[0]).toContain('env name TF_TOKEN_a.b is reserved');
  });

  it('stateEncryption: a fallback is one old passphrase or unencrypted, never the passphrase itself', () => {
    const ref = (key: string, name = 'state-key') => ({ name, key });
    const spec = (stateEncryption: unknown) => machine({ stateEncryption });
    expect(
      spec({ passphraseSecretRef: ref('new'), fallback: { passphraseSecretRef: ref('old') } }).success,
    ).toBe(true);
    expect(spec({ passphraseSecretRef: ref('new'), fallback: { unencrypted: true } }).success).toBe(true);
    expect(issues(spec({ passphraseSecretRef: ref('new'), fallback: {} }))[0]).toContain(
      'set fallback.passphraseSecretRef',
    );
    expect(
      issues(
        spec({
          passphraseSecretRef: ref('new'),
          fallback: { passphraseSecretRef: ref('old'), unencrypted: true },
        }),
      )[0],
    ).toContain('one of them');
    expect(
      issues(spec({ passphraseSecretRef: ref('new'), fallback: { passphraseSecretRef: ref('new') } })),
    ).toEqual([
      'stateEncryption.fallback: fallback.passphraseSecretRef names the passphrase itself: a rotation puts the new passphrase in another Secret key and names the old one as the fallback',
    ]);
    expect(issues(spec({ passphraseSecretRef: ref('k', 'captf-plan-key-m-x') }))[0]).toContain(
      'may not start with captf-',
    );
  });

  it('an env entry with value and valueFrom is rejected', () => {
    const env = [{ name: 'A', value: 'v', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }];
    expect(issues(machine({ jobs: { env } }))).toEqual([
      'jobs.env.0.valueFrom: set value or valueFrom, not both',
    ]);
  });

  it('driftCheck takes an interval or a schedule, not both; a bad cron says how to write one', () => {
    expect(issues(machine({ driftCheck: { interval: '5m', schedule: '0 * * * *' } }))).toEqual([
      'driftCheck.schedule: set driftCheck.interval or driftCheck.schedule, not both',
    ]);
    expect(issues(machine({ driftCheck: { schedule: '61 * * * *' } }))[0]).toContain(
      'use five numeric cron fields (each *, */step, a value, a range a-b or a list a,b)',
    );
  });

  it.each([
    { schedule: '0 */6 * * *', valid: true },
    { schedule: '15 9,17 * * 1-5', valid: true },
    { schedule: '@daily', valid: true },
    { schedule: '0 0 31 * *', valid: true },
    { schedule: '30-10 * * * *', valid: false },
    { schedule: '0 5,5 * * *', valid: false },
    { schedule: '0 05 * * *', valid: false },
    { schedule: '0 05 * * *', valid: false },
    { schedule: '0 0 31 2 *', valid: false },
    { schedule: '0 0 * * MON', valid: false },
    { schedule: '0 0 * * 7', valid: false },
    { schedule: '*/0 * * * *', valid: false },
    { schedule: '@reboot', valid: false },
  ])(
    'driftCheck.schedule $schedule → valid: $valid (the grammar the CRD checks in full)',
    ({ schedule, valid }) => {
      expect(machine({ driftCheck: { schedule } }).success).toBe(valid);
    },
  );

  it('an approved plan names its approver', () => {
    const plan = {
      targetRef: { kind: 'TerraformMachine', name: 'm-a', uid: 'u' },
      inputsHash: 'h',
      digest: 'd',
      add: 0,
      change: 1,
      destroy: 0,
      job: 'j',
      approved: true,
    };
    expect(issues(TerraformPlanSpecSchema.safeParse(plan))).toEqual([
      'approvedBy: set spec.approvedBy to your own user name when you set spec.approved: true',
    ]);
    expect(TerraformPlanSpecSchema.safeParse({ ...plan, approvedBy: 'alice' }).success).toBe(true);
  });
});

describe('object names: DESIGN.md section 9 (the owner-name label)', () => {
  const objects = [
    { kind: 'TerraformCluster', schema: TerraformClusterSchema },
    { kind: 'TerraformMachine', schema: TerraformMachineSchema },
    { kind: 'TerraformMachinePool', schema: TerraformMachinePoolSchema },
  ] as const;

  it.each(objects)(
    '$kind: a name of 63 characters is accepted, 64 is rejected saying why',
    ({ kind, schema }) => {
      const object = (name: string) => ({
        apiVersion: API_VERSION,
        kind,
        metadata: { name },
        spec: { source: { image: 'm:1' } },
      });
      expect(schema.safeParse(object('n'.repeat(MAX_TARGET_NAME_LENGTH))).success).toBe(true);
      expect(issues(schema.safeParse(object('n'.repeat(64))))).toEqual([
        ': metadata.name has 64 characters; at most 63 fit the captf.io/owner-name label of every Job of the object; choose a shorter name',
      ]);
    },
  );

  it('the CRDs of the three target kinds carry the same rule as CEL; the plan, template and policy kinds do not need it', () => {
    const rules = KIND_DEFINITIONS.map((d) => [d.kind, d.rootRules.map((r) => r.cel)]);
    expect(rules).toEqual([
      ['TerraformCluster', ['size(self.metadata.name) <= 63']],
      ['TerraformMachine', ['size(self.metadata.name) <= 63']],
      ['TerraformMachinePool', ['size(self.metadata.name) <= 63']],
      ['TerraformPlan', [approveOnlyPending.cel]],
      // Cluster API names each clone itself; a template's own name is never a label value.
      ['TerraformClusterTemplate', []],
      ['TerraformMachineTemplate', []],
      ['TerraformMachinePoolTemplate', []],
      // No Job carries a run policy's name.
      ['TerraformRunPolicy', []],
    ]);
  });

  it('a TerraformPlan name (the Job name + -plan) fits any name length: the Job name is at most 57', () => {
    for (const name of ['a', 'n'.repeat(63)]) {
      const job = jobName({
        kind: 'TerraformMachinePool',
        name,
        op: 'apply',
        attempt: 999,
        inputsHash: 'h',
        tick: 'now',
      });
      expect(planName(job).length).toBeLessThanOrEqual(MAX_JOB_NAME_LENGTH + '-plan'.length);
    }
  });
});

describe('resolveJobsPolicy: machines merge spec.jobs field by field over the cluster defaults', () => {
  const clusterDefaults = {
    activeDeadlineSeconds: 1800,
    lockTimeoutSeconds: 120,
    resources: { requests: { cpu: '1' } },
    env: [{ name: 'A', value: '1' }],
  };

  it('a field the machine sets wins; a field it leaves out comes from the cluster, then the built-in default', () => {
    const effective = resolveJobsPolicy(
      { activeDeadlineSeconds: 5400, resources: { limits: { memory: '4Gi' } } },
      clusterDefaults,
    );
    expect(effective).toMatchObject({
      activeDeadlineSeconds: 5400,
      lockTimeoutSeconds: 120,
      failedJobsHistoryLimit: 3,
      resources: { requests: { cpu: '1' }, limits: { memory: '4Gi' } },
      env: [{ name: 'A', value: '1' }],
    });
  });

  it('a merge can break the lock-timeout rule that each layer keeps: JobPolicyInvalid material', () => {
    const effective = resolveJobsPolicy({ activeDeadlineSeconds: 100 }, { lockTimeoutSeconds: 200 });
    expect(jobsPolicyProblems(effective)).toEqual([
      'lockTimeoutSeconds (200) must be below activeDeadlineSeconds (100): a Job waiting for the state lock would be killed before it runs; lower lockTimeoutSeconds or raise activeDeadlineSeconds',
    ]);
    expect(jobsPolicyProblems(resolveJobsPolicy(undefined, clusterDefaults))).toEqual([]);
  });
});
