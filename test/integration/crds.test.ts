import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { buildPlanManifest } from '../../src/core/plan-manifest.ts';
import { createRedactor } from '../../src/core/redaction.ts';
import { readPlanChanges } from '../../src/runner/plan-changes.ts';
import { testStack } from '../env/index.ts';

/**
 * The generated CRDs in the real API server (issue 3): valid samples are accepted, invalid objects are
 * rejected by the API server itself (OpenAPI limits and CEL rules) with the message people read, `kubectl get`
 * shows the printer columns and `kubectl explain` describes the fields.
 */

const root = join(import.meta.dirname, '..', '..');
const namespace = `crds-${randomBytes(3).toString('hex')}`;
const API_VERSION = 'infrastructure.cluster.x-k8s.io/v1alpha1';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real kubectl against the test stack, feeding `stdin` when given. */
function kubectl(args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

/** kubectl that must succeed; throws with its stderr otherwise. */
async function kubectlOk(args: string[], stdin?: string): Promise<string> {
  const run = await kubectl(args, stdin);
  if (run.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${run.code}: ${run.stderr}`);
  return run.stdout;
}

/** The sample documents of a file, moved into this test's namespace. */
function samples(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(root, 'infra', 'samples', file), 'utf8')).map((doc) => {
    const object = doc.toJS() as { metadata: Record<string, unknown> };
    return { ...object, metadata: { ...object.metadata, namespace } };
  });
}

function manifest(kind: string, name: string, spec: Record<string, unknown>): string {
  return stringify({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });
}

const machine = (name: string, spec: Record<string, unknown>) =>
  manifest('TerraformMachine', name, { source: { image: 'registry.example.com/m:1' }, ...spec });

beforeAll(async () => {
  await kubectlOk(['apply', '-f', join(root, 'infra', 'crds')]);
  await kubectlOk([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd',
    '-l',
    'cluster.x-k8s.io/v1beta1=v1alpha1',
  ]);
  await kubectlOk(['create', 'namespace', namespace]);
});

afterAll(async () => {
  await kubectl(['delete', 'namespace', namespace, '--wait=false']);
});

describe('CRDs in the real API server', () => {
  it('installs eight Established CRDs: the status subresource on all but the templates and the run policy', async () => {
    const out = await kubectlOk(['get', 'crd', '-l', 'cluster.x-k8s.io/v1beta1=v1alpha1', '-o', 'json']);
    const crds = (
      JSON.parse(out) as {
        items: { metadata: { name: string }; spec: { versions: { subresources?: object }[] } }[];
      }
    ).items;
    const subresources = Object.fromEntries(
      crds.map((crd) => [crd.metadata.name.split('.')[0], crd.spec.versions[0]?.subresources]),
    );
    expect(subresources).toEqual({
      terraformclusters: { status: {} },
      terraformmachinepools: { status: {} },
      terraformmachines: { status: {} },
      terraformplans: { status: {} },
      // Cluster API's v1beta2 contract: templates have no status the controller writes.
      terraformclustertemplates: undefined,
      terraformmachinetemplates: undefined,
      terraformmachinepooltemplates: undefined,
      // Written by a cluster admin, read by admission (infra/admission/run-policy.yaml): nothing to report.
      terraformrunpolicies: undefined,
    });
    const labelled = await kubectlOk([
      'get',
      'crd',
      '-l',
      'cluster.x-k8s.io/provider=infrastructure-terraform,cluster.x-k8s.io/v1beta2=v1alpha1',
      '-o',
      'name',
    ]);
    expect(labelled.trim().split('\n')).toHaveLength(8);
  });

  it('accepts the samples (a TerraformCluster and two TerraformMachines) and applies the schema defaults', async () => {
    const docs = [...samples('terraform-cluster.yaml'), ...samples('terraform-machines.yaml')];
    await kubectlOk(['create', '-f', '-'], docs.map((d) => stringify(d)).join('---\n'));
    const stored = JSON.parse(
      await kubectlOk(['get', 'terraformmachine', 'm-a', '-n', namespace, '-o', 'json']),
    ) as {
      spec: Record<string, unknown>;
    };
    expect(stored.spec).toMatchObject({
      applyPolicy: 'Automatic',
      driftCheck: { enabled: true, action: 'Report' },
    });
    expect(stored.spec.variables).toEqual({ size: 'small', disks: [20, 50] });
  });

  it.each([
    {
      name: 'lock timeout not below the deadline',
      body: machine('bad-lock', { jobs: { activeDeadlineSeconds: 300, lockTimeoutSeconds: 300 } }),
      message:
        'spec.jobs.lockTimeoutSeconds: Invalid value: lockTimeoutSeconds must be below activeDeadlineSeconds',
    },
    {
      name: 'an env name starting TF_',
      body: machine('bad-env', { jobs: { env: [{ name: 'TF_LOG', value: 'debug' }] } }),
      message: 'spec.jobs.env[0].name: Invalid value: env name TF_LOG is reserved',
    },
    {
      name: 'an env name starting KUBE_',
      body: machine('bad-kube-env', { jobs: { env: [{ name: 'KUBE_CONFIG_PATH', value: '/x' }] } }),
      message: 'env name KUBE_CONFIG_PATH is reserved',
    },
    {
      name: 'a deadline out of range',
      body: machine('bad-deadline', { jobs: { activeDeadlineSeconds: 86_401 } }),
      message:
        'spec.jobs.activeDeadlineSeconds: Invalid value: 86401: spec.jobs.activeDeadlineSeconds in body should be less than or equal to 86400',
    },
    {
      name: 'a bad enum (applyPolicy)',
      body: machine('bad-policy', { applyPolicy: 'Sometimes' }),
      message: 'spec.applyPolicy: Unsupported value: "Sometimes": supported values: "Automatic", "Manual"',
    },
    {
      name: 'a drift check with interval and schedule',
      body: machine('bad-drift', { driftCheck: { interval: '5m', schedule: '0 * * * *' } }),
      message: 'set driftCheck.interval or driftCheck.schedule, not both',
    },
    {
      name: 'a machine name over 63 characters (it could never label its Jobs)',
      body: machine('m'.repeat(64), {}),
      message: 'metadata.name must be at most 63 characters: it is the captf.io/owner-name label',
    },
    {
      name: 'a cluster name over 63 characters',
      body: manifest('TerraformCluster', 'c'.repeat(70), { source: { image: 'registry.example.com/c:1' } }),
      message: 'metadata.name must be at most 63 characters: it is the captf.io/owner-name label',
    },
    {
      name: 'a failed-history limit of 0',
      body: machine('bad-history', { jobs: { failedJobsHistoryLimit: 0 } }),
      message: 'spec.jobs.failedJobsHistoryLimit in body should be greater than or equal to 1',
    },
  ])('rejects $name with a clear message', async ({ body, message }) => {
    const run = await kubectl(['create', '-f', '-'], body);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(message);
  });

  it('rejects a bad op enum in status through the status subresource', async () => {
    await kubectlOk(['create', '-f', '-'], machine('status-op', {}));
    const patch = JSON.stringify({
      status: { activeJob: { name: 'j', op: 'plan', attempt: 1, startedAt: '2026-11-29T12:00:00Z' } },
    });
    const run = await kubectl([
      'patch',
      'terraformmachine',
      'status-op',
      '-n',
      namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      patch,
    ]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('status.activeJob.op: Unsupported value: "plan"');
  });

  it('keeps approvals honest: approver required, no withdrawal, binding fixed', async () => {
    const plan = manifest('TerraformPlan', 'plan-1', {
      targetRef: { kind: 'TerraformMachine', name: 'm-a', uid: 'uid-1' },
      inputsHash: 'h1',
      digest: 'sha256:d1',
      add: 0,
      change: 1,
      destroy: 0,
      job: 'captf-m-m-a-apply-a1-abcdef',
    });
    await kubectlOk(['create', '-f', '-'], plan);
    const patch = (spec: object) =>
      kubectl([
        'patch',
        'terraformplan',
        'plan-1',
        '-n',
        namespace,
        '--type=merge',
        '-p',
        JSON.stringify({ spec }),
      ]);
    expect((await patch({ approved: true })).stderr).toContain('set spec.approvedBy to your own user name');
    // Our own user name: the approval policy of infra/admission (installed with the CRDs) holds an approval
    // to the user who makes it; the CRD's rules below come first either way.
    const me = (await kubectlOk(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim();
    expect(me).not.toBe('');
    expect((await patch({ approved: true, approvedBy: me })).code).toBe(0);
    expect((await patch({ approved: false })).stderr).toContain('an approval cannot be withdrawn');
    expect((await patch({ digest: 'sha256:d2' })).stderr).toContain('these fields cannot change');
    expect((await patch({ approvedBy: 'mallory' })).stderr).toContain('spec.approvedBy cannot change');
  });

  it('a readable plan of 303 real changes: -o wide lists what it destroys, describe every change, and it is fixed', async () => {
    // The real `tofu show -json` of test/fixtures/plans (test/fixtures/plans/generate.sh).
    const doc = JSON.parse(
      gunzipSync(readFileSync(join(root, 'test/fixtures/plans/large-plan.show.json.gz'))).toString(),
    );
    const read = readPlanChanges(doc, createRedactor(['tok-123-canary-one', 'tok-123-canary-two']));
    if (!read.ok) throw new Error(read.message);
    const built = buildPlanManifest({
      target: {
        apiVersion: API_VERSION,
        kind: 'TerraformMachine',
        name: 'm-a',
        namespace,
        uid: 'uid-readable',
      },
      job: 'captf-m-m-a-apply-a2-0a1b2c',
      inputsHash: 'h2',
      plan: { digest: 'sha256:d9', add: 4, change: 288, destroy: 14, destructive: true },
      labels: {},
      changes: read.changes,
      requestedBy: { generation: 2, manager: 'kubectl-edit', time: '2026-12-03T08:00:00Z' },
    });
    const { ownerReferences: _owners, ...metadata } = built.metadata;
    await kubectlOk(['create', '-f', '-'], stringify({ ...built, metadata }));
    const name = built.metadata.name;

    const wide = await kubectlOk(['get', 'terraformplan', name, '-n', namespace, '-o', 'wide']);
    const [header, line] = wide.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual([
      'NAME',
      'TARGET',
      'PHASE',
      'ADD',
      'CHANGE',
      'DESTROY',
      'APPROVED',
      'DESTRUCTIVE',
      'AGE',
    ]);
    expect(line).toContain(
      '["terraform_data.keyed[(sensitive value)]","terraform_data.node[0]","terraform_data.node[1]"',
    );
    expect(line).toContain('"terraform_data.node[299]"]');

    const described = await kubectlOk(['describe', 'terraformplan', name, '-n', namespace]);
    for (const text of [
      'Address:  terraform_data.node[0]',
      'Action:   replace',
      'Replace Paths:',
      'triggers_replace',
      'Address:  terraform_data.node[289]',
      'input.label',
      'Omitted Resources:  0',
      'Manager:     kubectl-edit',
    ])
      expect(described).toContain(text);
    expect(described).not.toContain('tok-123-canary');

    const patch = (spec: object) =>
      kubectl([
        'patch',
        'terraformplan',
        name,
        '-n',
        namespace,
        '--type=merge',
        '-p',
        JSON.stringify({ spec }),
      ]);
    const changed = await patch({ changes: { ...read.changes, destructive: [] } });
    expect(changed.code).not.toBe(0);
    expect(changed.stderr).toContain('spec.changes is the plan as made; it cannot change');
    const removed = await kubectl([
      'patch',
      'terraformplan',
      name,
      '-n',
      namespace,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/spec/changes"}]',
    ]);
    expect(removed.stderr).toContain('spec.changes is the plan as made; it cannot change');
    // Approving a large plan stays within the CEL cost budget.
    const me = (await kubectlOk(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).trim();
    expect((await patch({ approved: true, approvedBy: me })).code).toBe(0);
  });

  it('kubectl get shows Ready (the condition), Op, Reason and Age; -o wide adds Provisioned and the Job', async () => {
    const status = {
      status: {
        ready: true,
        activeJob: {
          name: 'captf-m-m-a-drift-a1-abcdef',
          op: 'drift',
          attempt: 1,
          startedAt: '2026-11-29T12:00:00Z',
        },
        conditions: [
          {
            // Provisioned, and its last apply failed: READY must say False beside the reason.
            type: 'Ready',
            status: 'False',
            reason: 'ApplyFailed',
            message: 'apply failed',
            lastTransitionTime: '2026-11-29T12:00:00Z',
          },
        ],
      },
    };
    await kubectlOk([
      'patch',
      'terraformmachine',
      'm-a',
      '-n',
      namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify(status),
    ]);
    const table = await kubectlOk(['get', 'terraformmachines', '-n', namespace]);
    const [header, ...lines] = table.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'READY', 'OP', 'REASON', 'WAITING', 'AGE']);
    expect(
      lines
        .find((l) => l.startsWith('m-a '))
        ?.split(/\s+/)
        .slice(0, 4),
    ).toEqual(['m-a', 'False', 'drift', 'ApplyFailed']);
    const wide = await kubectlOk(['get', 'tfm', 'm-a', '-n', namespace, '-o', 'wide']);
    const [wideHeader, wideLine] = wide.trim().split('\n');
    expect(wideHeader?.split(/\s+/).slice(-2)).toEqual(['PROVISIONED', 'JOB']);
    expect(wideLine?.split(/\s+/).slice(-2)).toEqual(['true', 'captf-m-m-a-drift-a1-abcdef']);
  });

  it('kubectl explain describes the kinds and their fields', async () => {
    // The API server publishes a new CRD's OpenAPI a moment after it is Established.
    let run = await kubectl(['explain', 'terraformmachine.spec.jobs.lockTimeoutSeconds']);
    for (let i = 0; i < 50 && run.code !== 0; i += 1) {
      await sleep(200);
      run = await kubectl(['explain', 'terraformmachine.spec.jobs.lockTimeoutSeconds']);
    }
    expect(run.stdout).toContain('Seconds a step waits for the state lock (default 300, 0-3600, below');
    const kind = await kubectlOk(['explain', 'terraformcluster']);
    expect(kind).toContain('Cluster infrastructure of a Cluster API cluster');
    const plan = await kubectlOk(['explain', 'terraformplan.spec.approved']);
    expect(plan).toContain('Set to true to approve; cannot be withdrawn.');
  });
});

describe('template CRDs in the real API server (issue 11)', () => {
  const template = (kind: string, name: string, spec: Record<string, unknown>) =>
    manifest(kind, name, { template: { spec: { source: { image: 'registry.example.com/m:1' }, ...spec } } });

  it('TI01 a TerraformMachineTemplate as a MachineDeployment references it is accepted and round-trips with the clone’s defaults', async () => {
    const spec = {
      template: {
        metadata: { labels: { tier: 'workers' }, annotations: { 'example.com/team': 'a' } },
        spec: {
          source: { image: `registry.example.com/modules/worker@sha256:${'a'.repeat(64)}` },
          variables: { size: 'small', disks: [20, 50] },
          variablesFrom: [{ name: 'ssh_key', secretKeyRef: { name: 'demo-ssh', key: 'id_ed25519.pub' } }],
          jobs: { activeDeadlineSeconds: 1800, env: [{ name: 'HTTPS_PROXY', value: 'http://proxy:3128' }] },
          applyPolicy: 'Manual',
        },
      },
    };
    await kubectlOk(['create', '-f', '-'], manifest('TerraformMachineTemplate', 'workers', spec));
    const stored = JSON.parse(
      await kubectlOk(['get', 'terraformmachinetemplate', 'workers', '-n', namespace, '-o', 'json']),
    ) as { spec: unknown; status?: unknown };
    expect(stored.spec).toEqual({
      template: {
        ...spec.template,
        spec: { ...spec.template.spec, driftCheck: { enabled: true, action: 'Report' } },
      },
    });
    expect(stored).not.toHaveProperty('status');
    const table = await kubectlOk(['get', 'tfmt', '-n', namespace]);
    const [header, line] = table.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'IMAGE', 'AGE']);
    expect(line?.split(/\s+/).slice(0, 2)).toEqual(['workers', spec.template.spec.source.image]);
  });

  it('TI02 has no status subresource: nothing writes a template’s status', async () => {
    await kubectlOk(['create', '-f', '-'], template('TerraformClusterTemplate', 'no-status', {}));
    const run = await kubectl([
      'patch',
      'terraformclustertemplate',
      'no-status',
      '-n',
      namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"ready":true}}',
    ]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('NotFound');
  });

  it('TI03 kubectl explain documents spec.template.spec down to source.image, and the clone’s fields', async () => {
    let run = await kubectl(['explain', 'terraformmachinetemplate.spec.template.spec.source.image']);
    for (let i = 0; i < 50 && run.code !== 0; i += 1) {
      await sleep(200);
      run = await kubectl(['explain', 'terraformmachinetemplate.spec.template.spec.source.image']);
    }
    expect(run.stdout).toContain('The module image (tag or digest) with /captf/module and /captf/runtime.');
    const spec = await kubectlOk(['explain', 'terraformmachinetemplate.spec.template.spec']);
    expect(spec).toContain('Desired state of a TerraformMachine');
    for (const field of [
      'applyPolicy',
      'backend',
      'driftCheck',
      'jobs',
      'source',
      'variables',
      'variablesFrom',
    ])
      expect(spec).toMatch(new RegExp(`^ {2}${field}\\b`, 'm'));
    const metadata = await kubectlOk(['explain', 'terraformmachinetemplate.spec.template.metadata.labels']);
    expect(metadata).toContain('Labels Cluster API puts on every object cloned from the template.');
    expect(await kubectlOk(['explain', 'terraformclustertemplate'])).toContain(
      'A template ClusterClass clones into the TerraformCluster',
    );
    expect(await kubectlOk(['explain', 'terraformmachinepooltemplate.spec.template.spec.jobs'])).toContain(
      'lockTimeoutSeconds',
    );
  });

  it.each([
    {
      id: 'TI10',
      name: 'a providerID in a TerraformMachineTemplate',
      body: template('TerraformMachineTemplate', 'bad-provider-id', { providerID: 'captf://m-a' }),
      message:
        'spec.template.spec.providerID: Invalid value: providerID cannot be set in a template: the controller writes it on each object cloned from the template',
    },
    {
      id: 'TI11',
      name: 'a providerIDList in a TerraformMachinePoolTemplate',
      body: template('TerraformMachinePoolTemplate', 'bad-provider-ids', { providerIDList: ['captf://p-0'] }),
      message: 'spec.template.spec.providerIDList: Invalid value: providerIDList cannot be set in a template',
    },
    {
      id: 'TI12',
      name: 'a controlPlaneEndpoint in a TerraformClusterTemplate',
      body: template('TerraformClusterTemplate', 'bad-endpoint', {
        controlPlaneEndpoint: { host: '10.0.0.1', port: 6443 },
      }),
      message: 'spec.template.spec.controlPlaneEndpoint: Invalid value: controlPlaneEndpoint cannot be set',
    },
    {
      id: 'TI13',
      name: 'a lock timeout not below the deadline (the message a TerraformMachine gets)',
      body: template('TerraformMachineTemplate', 'bad-lock', {
        jobs: { activeDeadlineSeconds: 300, lockTimeoutSeconds: 300 },
      }),
      message:
        'spec.template.spec.jobs.lockTimeoutSeconds: Invalid value: lockTimeoutSeconds must be below activeDeadlineSeconds',
    },
    {
      id: 'TI14',
      name: 'an env name starting TF_',
      body: template('TerraformMachineTemplate', 'bad-env', {
        jobs: { env: [{ name: 'TF_LOG', value: 'x' }] },
      }),
      message: 'spec.template.spec.jobs.env[0].name: Invalid value: env name TF_LOG is reserved',
    },
    {
      id: 'TI15',
      name: 'a bad enum (applyPolicy)',
      body: template('TerraformMachinePoolTemplate', 'bad-policy', { applyPolicy: 'Sometimes' }),
      message:
        'spec.template.spec.applyPolicy: Unsupported value: "Sometimes": supported values: "Automatic", "Manual"',
    },
    {
      id: 'TI16',
      name: 'a template without its spec',
      body: manifest('TerraformMachineTemplate', 'no-spec', {
        template: { metadata: { labels: { a: 'b' } } },
      }),
      message: 'spec.template.spec: Required value',
    },
    {
      id: 'TI17',
      name: 'a misspelt field (kubectl validates strictly)',
      body: template('TerraformMachineTemplate', 'typo', { varibles: { size: 'small' } }),
      message: 'unknown field "spec.template.spec.varibles"',
    },
  ])('$id refuses $name with a clear message', async ({ body, message }) => {
    const run = await kubectl(['create', '-f', '-'], body);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(message);
  });
});
