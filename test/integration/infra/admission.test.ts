import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { testStack } from '../../env/index.ts';

// DESIGN.md section 11: the shipped ValidatingAdmissionPolicy, applied to the real API server, makes
// spec.approvedBy equal the requesting user and approval irreversible. Users are impersonated with the
// admin credentials (`kubectl --as`).

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const namespace = `approval-${randomBytes(3).toString('hex')}`;

async function kubectl(args: string[], input?: string): Promise<string> {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/** Runs kubectl and returns its error text, or '' when it succeeded. */
async function kubectlError(args: string[]): Promise<string> {
  try {
    await kubectl(args);
    return '';
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
}

function plan(name: string): string {
  return JSON.stringify({
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
    kind: 'TerraformPlan',
    metadata: { name, namespace },
    spec: {
      targetRef: { kind: 'TerraformCluster', name: 'c1', uid: '00000000-0000-0000-0000-000000000001' },
      inputsHash: 'sha256-inputs',
      digest: 'sha256-digest',
      add: 1,
      change: 0,
      destroy: 1,
      destructive: true,
      job: 'captf-c-c1-apply-a1-abcdef',
    },
  });
}

const approve = (name: string, as: string, approvedBy: string) => [
  '--as',
  as,
  '-n',
  namespace,
  'patch',
  'terraformplan',
  name,
  '--type=merge',
  '-p',
  JSON.stringify({ spec: { approved: true, approvedBy } }),
];

beforeAll(async () => {
  await kubectl([
    'apply',
    '-f',
    join(root, 'infra/crds/infrastructure.cluster.x-k8s.io_terraformplans.yaml'),
  ]);
  await kubectl([
    'wait',
    '--for=condition=Established',
    'crd/terraformplans.infrastructure.cluster.x-k8s.io',
    '--timeout=60s',
  ]);
  await kubectl(['apply', '-f', join(root, 'infra/admission/approval-policy.yaml')]);
  await kubectl(['create', 'namespace', namespace]);
  // Approvers may patch plans; nothing else.
  await kubectl([
    '-n',
    namespace,
    'create',
    'role',
    'plan-approver',
    '--verb=get,patch,update',
    '--resource=terraformplans.infrastructure.cluster.x-k8s.io',
  ]);
  await kubectl([
    '-n',
    namespace,
    'create',
    'rolebinding',
    'plan-approvers',
    '--role=plan-approver',
    '--user=alice',
    '--user=bob',
  ]);
  // The policy takes effect once the API server has compiled it; probe with a plan that must be rejected.
  // A fresh plan each try: an approval that got through before the policy was live sticks (approval is
  // irreversible), and repeating it would be a no-op that no policy rejects.
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; Date.now() < deadline; attempt += 1) {
    await kubectl(['apply', '-f', '-'], plan(`probe-${attempt}`));
    if ((await kubectlError(approve(`probe-${attempt}`, 'alice', 'mallory'))).includes('approvedBy')) return;
    await sleep(500);
  }
  throw new Error('admission policy: not enforced within 60 s');
}, 120_000);

describe('TerraformPlan approval policy', () => {
  it('accepts an approval naming the requesting user', async () => {
    await kubectl(['apply', '-f', '-'], plan('p-own'));
    expect(await kubectlError(approve('p-own', 'alice', 'alice'))).toBe('');
    const approvedBy = await kubectl([
      '-n',
      namespace,
      'get',
      'terraformplan',
      'p-own',
      '-o',
      'jsonpath={.spec.approvedBy}',
    ]);
    expect(approvedBy).toBe('alice');
  });

  it('rejects an approval naming someone else, with the requesting user in the message', async () => {
    await kubectl(['apply', '-f', '-'], plan('p-other'));
    const error = await kubectlError(approve('p-other', 'alice', 'bob'));
    expect(error).toContain('spec.approvedBy must be your own user name (alice)');
    const approved = await kubectl([
      '-n',
      namespace,
      'get',
      'terraformplan',
      'p-other',
      '-o',
      'jsonpath={.spec.approved}',
    ]);
    expect(approved).not.toBe('true');
  });

  it('an approval cannot be withdrawn, nor re-attributed by another user', async () => {
    await kubectl(['apply', '-f', '-'], plan('p-final'));
    expect(await kubectlError(approve('p-final', 'bob', 'bob'))).toBe('');
    const withdraw = await kubectlError([
      '--as',
      'bob',
      '-n',
      namespace,
      'patch',
      'terraformplan',
      'p-final',
      '--type=merge',
      '-p',
      '{"spec":{"approved":false}}',
    ]);
    expect(withdraw).toMatch(/irreversible|cannot be withdrawn/);
    const reattribute = await kubectlError(approve('p-final', 'alice', 'alice'));
    expect(reattribute).toContain('approvedBy cannot change');
  });
});
