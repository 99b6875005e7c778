import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { testStack } from '../../env/index.ts';
import { applyKnativeCrds } from '../../env/knative-crds.ts';
import { testTempDir } from '../../env/temp-dir.ts';

// docs/install.md tried as a new user would: every `bash` block, in order, in one shell session (variables
// carry over, as in a terminal), from a directory that holds the repository's infra/, against the local
// control plane with Knative's CRDs from its Go modules. Blocks marked `<!-- needs … -->` need running
// Knative controllers, the Prometheus operator or AWS, none of which exist here; the test lists them.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const DOC = join(root, 'docs', 'install.md');

interface Block {
  /** The `<!-- needs … -->` line right before the block, if any. */
  needs?: string;
  script: string;
  line: number;
}

function bashBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index++) {
    if (lines[index] !== '```bash') continue;
    const end = lines.indexOf('```', index + 1);
    const previous = lines[index - 1] ?? '';
    const needs = /^<!-- (needs .+) -->$/.exec(previous)?.[1];
    blocks.push({
      script: lines.slice(index + 1, end).join('\n'),
      line: index + 1,
      ...(needs ? { needs } : {}),
    });
    index = end;
  }
  return blocks;
}

const blocks = bashBlocks(readFileSync(DOC, 'utf8'));
let workDir = '';
let session: { status: number | null; output: string };
/** What the shared stack had before the doc ran: the test puts it back that way. */
let before: { namespace: boolean; policy: boolean; podPolicy: boolean; runPolicy: boolean };

async function kubectl(args: string[]): Promise<string> {
  const stack = testStack();
  return (await run(stack.kubectlPath, ['--kubeconfig', stack.kubeconfigPath, ...args])).stdout;
}

async function exists(args: string[]): Promise<boolean> {
  return kubectl(['get', ...args, '-o', 'name'])
    .then(() => true)
    .catch(() => false);
}

beforeAll(async () => {
  const stack = testStack();
  before = {
    namespace: await exists(['namespace', 'captf-system']),
    policy: await exists(['-f', join(root, 'infra/admission/approval-policy.yaml')]),
    podPolicy: await exists(['-f', join(root, 'infra/admission/controller-pod-policy.yaml')]),
    runPolicy: await exists(['-f', join(root, 'infra/admission/run-policy.yaml')]),
  };
  await applyKnativeCrds(stack);
  workDir = testTempDir('captf-install-doc-');
  symlinkSync(join(root, 'infra'), join(workDir, 'infra'));
  const runnable = blocks.filter((block) => block.needs === undefined);
  const script = runnable
    .map((block) => `echo "## docs/install.md line ${block.line}"\n${block.script}`)
    .join('\n');
  const shell = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: workDir,
    encoding: 'utf8',
    // No socket on stdin: Debian's bash takes one for rshd and reads /etc/bash.bashrc.
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: `${dirname(stack.kubectlPath)}:${process.env.PATH}`,
      HOME: workDir,
      KUBECONFIG: stack.kubeconfigPath,
    },
    timeout: 240_000,
  });
  session = { status: shell.status, output: `${shell.stdout}\n${shell.stderr}` };
}, 300_000);

afterAll(async () => {
  // Put the shared stack back as it was, so no other file sees the doc's objects: the samples (finalizers
  // first: no controller runs here) and team-a; captf-system, or what the doc added to it when another file
  // had made it; the cluster-wide admission policies, which would refuse other files' approvals and pod patches. The CRDs stay:
  // every file applies the same ones.
  for (const resource of ['terraformclusters', 'terraformmachines']) {
    const names = await kubectl(['get', resource, '-n', 'team-a', '-o', 'name']).catch(() => '');
    for (const name of names.split('\n').filter(Boolean)) {
      await kubectl([
        'patch',
        name,
        '-n',
        'team-a',
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":null}}',
      ]).catch(() => undefined);
    }
  }
  const gone = ['--ignore-not-found', '--wait=true', '--timeout=120s'];
  await kubectl(['delete', 'namespace', 'team-a', ...gone]);
  if (before.namespace) {
    await kubectl(['delete', '-n', 'captf-system', ...gone, '-k', join(root, 'infra/lambda')]);
    await kubectl([
      'delete',
      '-n',
      'captf-system',
      ...gone,
      'services.serving.knative.dev/captf',
      'apiserversource/captf-objects',
      'apiserversource/captf-secrets',
      'pingsource/captf-tick',
      'deployment/captf-redis',
      'service/captf-redis',
      'secret/captf-redis',
      'networkpolicy/captf-redis',
      'networkpolicy/captf-handlers',
      'configmap/captf-images',
    ]);
  } else {
    await kubectl(['delete', 'namespace', 'captf-system', ...gone]);
  }
  if (!before.policy)
    await kubectl(['delete', '-f', join(root, 'infra/admission/approval-policy.yaml'), ...gone]);
  if (!before.podPolicy)
    await kubectl(['delete', '-f', join(root, 'infra/admission/controller-pod-policy.yaml'), ...gone]);
  if (!before.runPolicy)
    await kubectl(['delete', '-f', join(root, 'infra/admission/run-policy.yaml'), ...gone]);
}, 300_000);

describe('docs/install.md against the local control plane', () => {
  it('runs every bash block as written, and marks only what needs controllers, the operator or AWS', () => {
    expect(session.status, session.output).toBe(0);
    const skipped = blocks.filter((block) => block.needs !== undefined).map((block) => block.needs);
    expect(skipped.sort()).toEqual(
      [
        'needs AWS',
        'needs AWS',
        // The SSM parameters and the deployment that names them (the Lambda's secret store).
        'needs AWS',
        'needs running controllers',
        'needs running controllers',
        'needs running controllers',
        'needs running controllers',
        'needs running controllers',
        'needs the Prometheus operator',
      ].sort(),
    );
    expect(blocks.length - skipped.length).toBe(10);
  });

  it('the Knative path is installed with the image references of infra/kustomization.yaml', async () => {
    const service = JSON.parse(
      await kubectl(['get', 'services.serving.knative.dev', 'captf', '-n', 'captf-system', '-o', 'json']),
    );
    const container = service.spec.template.spec.containers[0];
    expect(container.image).toBe('ghcr.io/captf/captf-controller:0.1.0');
    expect(container.env).toContainEqual({
      name: 'CAPTF_RUNNER_IMAGE',
      value: 'ghcr.io/captf/captf-runner:0.1.0',
    });
    for (const resource of [
      'apiserversource/captf-objects',
      'apiserversource/captf-secrets',
      'pingsource/captf-tick',
      'deployment/captf-redis',
    ]) {
      expect(await kubectl(['get', resource, '-n', 'captf-system', '-o', 'name'])).toContain(
        resource.split('/')[1],
      );
    }
  });

  it('the workload namespace holds the samples, which name no service account (each gets its own identity)', async () => {
    const accounts = await kubectl([
      'get',
      'terraformclusters,terraformmachines',
      '-n',
      'team-a',
      '-o',
      'jsonpath={.items[*].spec.jobs.serviceAccountName}{.items[*].spec.defaults.jobs.serviceAccountName}',
    ]);
    expect(accounts.trim()).toBe('');
    const names = await kubectl(['get', 'terraformclusters,terraformmachines', '-n', 'team-a', '-o', 'name']);
    expect(names.trim().split('\n').sort()).toEqual(
      [
        'terraformcluster.infrastructure.cluster.x-k8s.io/demo',
        'terraformmachine.infrastructure.cluster.x-k8s.io/m-a',
        'terraformmachine.infrastructure.cluster.x-k8s.io/m-b',
      ].sort(),
    );
  });

  it("the run policy of step 4 refuses an image outside team-a's bound with the message the doc shows", async () => {
    const shown = readFileSync(DOC, 'utf8')
      .split('\n')
      .find((line) =>
        line.startsWith('terraformmachines.infrastructure.cluster.x-k8s.io "m-x" is forbidden'),
      );
    expect(shown).toBeDefined();
    const machine = JSON.stringify({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'TerraformMachine',
      metadata: { name: 'm-x', namespace: 'team-a' },
      spec: { source: { image: 'docker.io/someone/miner:1' } },
    });
    const stack = testStack();
    const refusal = () => {
      const child = run(stack.kubectlPath, [
        '--kubeconfig',
        stack.kubeconfigPath,
        'create',
        '--dry-run=server',
        '-f',
        '-',
      ]);
      child.child.stdin?.end(machine);
      return child.then(
        () => '',
        (error: { stderr?: string }) => String(error.stderr),
      );
    };
    // The policy applied in step 3 takes effect once the API server compiled it (usually already).
    let error = await refusal();
    for (let attempt = 0; attempt < 60 && error === ''; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      error = await refusal();
    }
    expect(error).toContain(shown);
  });

  it('the Lambda path: the relay runs the controller image, and the built kubeconfig acts as the controller', async () => {
    const relay = JSON.parse(
      await kubectl(['get', 'deployment', 'captf-relay', '-n', 'captf-system', '-o', 'json']),
    );
    expect(relay.spec.template.spec.containers[0]).toMatchObject({
      image: 'ghcr.io/captf/captf-controller:0.1.0',
      args: ['/app/relay/relay.mjs'],
    });
    const kubeconfig = join(workDir, 'captf-lambda.kubeconfig');
    const stack = testStack();
    const as = (args: string[]) => run(stack.kubectlPath, ['--kubeconfig', kubeconfig, ...args]);
    const who = JSON.parse((await as(['auth', 'whoami', '-o', 'json'])).stdout);
    expect(who.status.userInfo.username).toBe('system:serviceaccount:captf-system:captf-controller');
    expect((await as(['get', 'terraformmachines', '-n', 'team-a', '-o', 'name'])).stdout).toContain('m-a');
    // The one-line JSON a --param carries is the same kubeconfig.
    expect(parse(readFileSync(kubeconfig, 'utf8')).users[0].user.token).toMatch(/^ey/);
  });
});
