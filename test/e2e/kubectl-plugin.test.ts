import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BUNDLES, ensureBundlesBuilt } from '../../functions/bundle.ts';
import { VARIABLES_SECRET_LABELS } from '../../src/core/variables-opt-in.ts';
import { nextCommands } from '../../src/local/try-next.ts';
import { grantPlanApprovers } from '../../src/local/workload-namespace.ts';
import { testStack } from '../env/index.ts';
import { bashBlocks, blockOf, type RunbookShell, runbookShell } from '../env/runbook.ts';
import {
  applyObjects,
  type E2eRun,
  machine,
  type ObservedObject,
  patchObject,
  RESOURCE,
  readObject,
  startE2eRun,
  waitFor,
  waitObject,
  waitReady,
} from './harness.ts';

// `kubectl captf` end to end (docs/kubectl-plugin.md): the bundled executable on PATH, found and run by the
// stack's real kubectl against the real local run, every verb, approve refused for a caller RBAC does not
// let patch plans, and the canary (a Secret value fed to a variable) in no output.

const MINUTE = 60_000;
const CANARY = 'tok-123-canary';
const repoRoot = join(import.meta.dirname, '..', '..');
const exec = promisify(execFile);

/** The krew release the build packs (functions/bundle.ts `packKrewRelease`). */
const krewDir = join(repoRoot, BUNDLES.plugin.krew.dir);
const krewArchive = join(krewDir, 'kubectl-captf.tar.gz');

let run: E2eRun;
let pluginDir: string;
let shell: RunbookShell;
const docBlocks = bashBlocks(readFileSync(join(repoRoot, 'docs', 'kubectl-plugin.md'), 'utf8'));
/** Everything the plugin printed, to look for the canary in at the end. */
const printed: string[] = [];

/** `kubectl <args>` with the plugin on PATH (and the project's node for its shebang). */
async function kubectl(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stack = testStack();
  const env = {
    ...process.env,
    PATH: [pluginDir, dirname(process.execPath), process.env.PATH ?? ''].join(':'),
  };
  try {
    const { stdout, stderr } = await exec(stack.kubectlPath, [...args], { env, maxBuffer: 16 * 1024 * 1024 });
    printed.push(stdout, stderr);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    printed.push(failed.stdout ?? '', failed.stderr ?? '');
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** `kubectl captf <args>` as the admin of the test stack, in the run's namespace. */
function captf(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return kubectl(['captf', ...args, '--kubeconfig', testStack().kubeconfigPath, '-n', run.namespace]);
}

/** Runs lines of npm start's banner in bash, as a person pastes them into a terminal. */
async function pasted(...lines: string[]): Promise<string> {
  const { stdout, stderr } = await exec('bash', ['-o', 'pipefail', '-c', lines.join('\n')], {
    env: { ...process.env },
  });
  printed.push(stdout, stderr);
  return stdout;
}

/** Runs the `index`-th bash block of docs/kubectl-plugin.md's section as written, in this run's namespace. */
async function doc(section: string, index: number, variables: Record<string, string>): Promise<string> {
  const { stdout, stderr } = await shell.run(blockOf(docBlocks, section, index), {
    NS: run.namespace,
    KIND: 'terraformmachine',
    ...variables,
  });
  printed.push(stdout, stderr);
  return stdout;
}

beforeAll(async () => {
  await ensureBundlesBuilt(['plugin'], () => undefined);
  // Installed as krew installs it: the release archive unpacked into a directory on PATH.
  pluginDir = mkdtempSync(join(tmpdir(), 'captf-plugin-path-'));
  await exec('tar', ['-xzf', krewArchive, '-C', pluginDir]);
  shell = runbookShell(MINUTE, [pluginDir, dirname(process.execPath)]);
  run = await startE2eRun('plugin');
  await run.kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'canary-vars', namespace: run.namespace, labels: VARIABLES_SECRET_LABELS },
      stringData: { generation: CANARY, size: CANARY },
    }),
  );
  await applyObjects(run, [
    // A string variable fed the canary: it is in every plan and apply log of m-b, for the plugin to leak.
    machine(run, 'm-b', {
      variablesFrom: [{ name: 'size', secretKeyRef: { name: 'canary-vars', key: 'size' } }],
    }),
    // A number variable fed the canary: its plan fails, and OpenTofu's error quotes the value.
    machine(run, 'm-f', {
      variablesFrom: [{ name: 'generation', secretKeyRef: { name: 'canary-vars', key: 'generation' } }],
    }),
  ]);
}, 2 * MINUTE);

afterAll(async () => {
  shell?.close();
  await run?.close();
  if (pluginDir) rmSync(pluginDir, { recursive: true, force: true });
}, MINUTE);

describe('kubectl captf against the local run', () => {
  it('the krew manifest names the release archive by its digest, and its bin is the executable inside', () => {
    const manifest = parse(readFileSync(join(krewDir, 'captf.yaml'), 'utf8')) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string };
      spec: { platforms: { sha256: string; bin: string; files: { from: string }[] }[] };
    };
    expect(manifest).toMatchObject({
      apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
      kind: 'Plugin',
      metadata: { name: 'captf' },
    });
    const platform = manifest.spec.platforms[0];
    expect(platform?.sha256).toBe(createHash('sha256').update(readFileSync(krewArchive)).digest('hex'));
    expect(platform?.bin).toBe('kubectl-captf');
    // Every file the manifest installs is in the archive (krew refuses a `from` that matches nothing).
    expect(platform?.files.map((f) => f.from).sort()).toEqual(readdirSync(pluginDir).sort());
    expect(statSync(join(pluginDir, 'kubectl-captf')).mode & 0o111).not.toBe(0);
    // The build's own directory, which npm start's banner puts on PATH, holds the executable alone: kubectl
    // takes every kubectl-* file there for a plugin (and its `plugin list` fails on one not executable).
    expect(readdirSync(dirname(join(repoRoot, BUNDLES.plugin.outfile)))).toEqual(['kubectl-captf']);
  });

  it('kubectl finds the plugin on PATH; status shows the live table', async () => {
    const list = await kubectl(['plugin', 'list']);
    expect(list.stdout).toContain(join(pluginDir, 'kubectl-captf'));
    await waitReady(run, RESOURCE.TerraformMachine, 'm-b', 2 * MINUTE);
    const status = await captf('status');
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/OBJECT\s+READY\s+OP\s+REASON\s+LAST RUN\s+CLUSTER API/);
    expect(status.stdout).toMatch(/TerraformMachine\/m-b\s+True\s+apply/);
    expect(status.stdout).toMatch(/captf-local:\/\/m-b\//);
    const applyLog = await captf('logs', 'terraformmachine/m-b', '--op', 'apply');
    expect(applyLog.code).toBe(0);
    expect(applyLog.stdout).toContain('captf-runner: step ');
    expect(applyLog.stdout).not.toContain(CANARY);
    const why = await captf('why', 'tfm/m-b');
    expect(why.code).toBe(0);
    expect(why.stdout).toMatch(/^next step: /m);
    expect(why.stdout).toContain('dry run:');
    // The doc's commands, as written (the doc's variables from the test).
    expect(await doc('What is going on', 0, { NAME: 'm-b' })).toMatch(/TerraformMachine\/m-b\s+True/);
    expect(await doc('What is going on', 1, { NAME: 'm-b' })).toMatch(/^next step: none \(UpToDate\)/m);
  });

  it('runs and logs: the history with results; a failed run is readable live and, from its kept log, after its pod is gone', async () => {
    const failed = await waitObject(
      run,
      RESOURCE.TerraformMachine,
      'm-f',
      'm-f failed',
      (o: ObservedObject) => o.status?.lastRun?.result === 'failed',
      2 * MINUTE,
    );
    const job = failed.status?.lastRun?.job ?? '';
    const runs = await captf('runs', 'terraformmachine/m-f');
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(/^JOB\s+OP\s+ATTEMPT\s+STARTED\s+FINISHED\s+RESULT\s+LOG/);
    expect(runs.stdout).toMatch(new RegExp(`^${job}\\s+apply\\s+1\\s.*\\sstep-failed\\s`, 'm'));
    const live = await captf('logs', 'terraformmachine/m-f', '--op', 'apply', '--attempt', '1');
    expect(live.code).toBe(0);
    expect(live.stdout).toContain(`# log of ${job} (pod `);
    expect(live.stdout).toMatch(/generation/);
    expect(live.stdout).not.toContain(CANARY);
    // The runner kept its log as it exited (a Secret per finished run, its text redacted); then the Job
    // and its pod go: the log is still readable, from that Secret.
    const keptLog = await waitFor(
      `captf-log-${job} written by the runner`,
      () =>
        run.kubectl
          .run(['get', 'secret', `captf-log-${job}`, '-n', run.namespace, '-o', 'json'])
          .catch(() => ''),
      (json) => json !== '',
      MINUTE,
    );
    expect(JSON.parse(keptLog)).toMatchObject({
      type: 'captf.io/run-log',
      metadata: { labels: { 'captf.io/job': job, 'captf.io/run-log': 'true' } },
    });
    await run.kubectl.run([
      'delete',
      'job',
      job,
      '-n',
      run.namespace,
      '--cascade=foreground',
      '--wait=false',
    ]);
    // Foreground: the Job goes only after its pods are gone.
    await waitFor(
      `Job ${job} and its pods gone`,
      () => run.kubectl.run(['get', 'jobs,pods', '-n', run.namespace, '-o', 'name']),
      (names) => !names.includes(job),
      MINUTE,
    );
    // The doc's runs and logs block: the history, then the kept log under its header.
    const kept = await doc('Runs and their logs', 0, { NAME: 'm-f' });
    // Its Job gone, the run still shows when it started and finished.
    expect(kept).toMatch(
      new RegExp(`^${job}\\s+apply\\s+1\\s+\\S+Z\\s+\\S+Z\\s+failed \\(ApplyFailed\\)\\s+kept$`, 'm'),
    );
    expect(kept).toContain(`# log of ${job}, kept after its pod (complete)`);
    // The same runner lines the live log showed, the canary's variable among them.
    expect(kept).toContain('captf-runner: step ');
    expect(kept).toMatch(/generation/);
    expect(kept).not.toContain(CANARY);
  });

  it('plan and approve: a destructive change reads as a plan; a caller without the right is refused, an approver approves as themself, bound to the digest', async () => {
    await patchObject(run, RESOURCE.TerraformMachine, 'm-b', { spec: { variables: { generation: 2 } } });
    const blocked = await waitObject(
      run,
      RESOURCE.TerraformMachine,
      'm-b',
      'm-b blocked on its destructive plan',
      (o) => o.status?.pendingPlanRef?.name !== undefined && o.status.activeJob === undefined,
      2 * MINUTE,
    );
    const planName = blocked.status?.pendingPlanRef?.name ?? '';
    const plan = await captf('plan', 'terraformmachine/m-b');
    expect(plan.code).toBe(0);
    console.log(`[kubectl-plugin] kubectl captf plan terraformmachine/m-b:\n${plan.stdout}`);
    expect(plan.stdout).toContain(`TerraformPlan ${planName}  phase Pending`);
    expect(plan.stdout).toMatch(/-\/\+\s+terraform_data\.server\s+replace/);
    expect(plan.stdout).toContain('forces replacement: triggers_replace');
    expect(plan.stdout).not.toContain(CANARY);
    const digest = /--digest (\S+)/.exec(plan.stdout)?.[1] ?? '';
    // why: the object waits for the approval, and the step's own decision says it would do nothing else.
    const why = await captf('why', 'terraformmachine/m-b');
    expect(why.stdout).toMatch(/^waiting: AwaitingApproval: /m);
    expect(why.stdout).toMatch(/^next step: waiting \(AwaitingApproval\)/m);
    expect(digest).not.toBe('');

    // mallory may read the objects and plans, not patch them: refused with the API server's message.
    await run.kubectl.run(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: 'captf-viewer', namespace: run.namespace },
            rules: [
              {
                apiGroups: ['infrastructure.cluster.x-k8s.io'],
                resources: ['terraformmachines', 'terraformplans'],
                verbs: ['get', 'list'],
              },
            ],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: 'captf-viewer', namespace: run.namespace },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'captf-viewer' },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }],
          },
        ],
      }),
    );
    const refused = await captf('approve', 'terraformmachine/m-b', '--as', 'mallory', '--digest', digest);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /approve TerraformPlan .* as mallory: Forbidden \(403\): .*User "mallory" cannot patch/,
    );
    const stale = await captf(
      'approve',
      'terraformmachine/m-b',
      '--as',
      'mallory',
      '--digest',
      'not-the-digest',
    );
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('the pending plan is not the one you read');
    expect(
      (await readObject<{ spec: { approved?: boolean } }>(run, RESOURCE.TerraformPlan, planName))?.spec
        .approved,
    ).toBe(false);

    // npm start's banner, as printed for this namespace: its PATH line, then its plan and approve lines
    // (approve as alice, impersonated); then the doc's blocks as written (approving again says by whom).
    await grantPlanApprovers(run.kubectl, run.namespace);
    const stack = testStack();
    const banner = nextCommands({
      kubectlPath: stack.kubectlPath,
      kubeconfigPath: stack.kubeconfigPath,
      namespace: run.namespace,
      pluginDir: dirname(join(repoRoot, BUNDLES.plugin.outfile)),
      nodeDir: dirname(process.execPath),
      handlersUrl: run.controller.url,
    }).map((line) => line.trim());
    const bannerLine = (prefix: string) => {
      const line = banner.find((l) => l.startsWith(prefix));
      if (line === undefined) throw new Error(`the banner has no line starting ${prefix}`);
      return line;
    };
    const pathLine = bannerLine('export PATH=');
    // With the banner's PATH, kubectl lists the plugin and nothing it would warn about (it exits 1 then);
    // over a bare system PATH, so a plugin installed on this machine (npm link) shadows nothing.
    expect(await pasted('export PATH=/usr/bin:/bin', pathLine, 'kubectl plugin list')).toContain(
      join(repoRoot, BUNDLES.plugin.outfile),
    );
    expect(await doc('The pending plan', 0, { NAME: 'm-b' })).toContain(`--digest ${digest}`);
    expect(await pasted(pathLine, bannerLine('kubectl captf plan terraformmachine/m-b'))).toContain(
      `TerraformPlan ${planName}  phase Pending`,
    );
    expect(await pasted(pathLine, bannerLine('kubectl captf approve terraformmachine/m-b'))).toContain(
      `approved TerraformPlan ${planName} (digest ${digest}) as alice`,
    );
    expect(await doc('The pending plan', 1, { NAME: 'm-b', DIGEST: digest })).toContain(
      `TerraformPlan ${planName} is already approved by alice`,
    );
    const planObject = await readObject<{ spec: { approved?: boolean; approvedBy?: string } }>(
      run,
      RESOURCE.TerraformPlan,
      planName,
    );
    expect(planObject?.spec).toMatchObject({ approved: true, approvedBy: 'alice' });
    await waitObject(
      run,
      RESOURCE.TerraformMachine,
      'm-b',
      'the approved plan applied',
      (o) => o.status?.lastRun?.plan?.digest === digest && o.status.lastRun.result === 'succeeded',
      2 * MINUTE,
    );
  });

  it('unlock: a foreign lock is refused until the caller names its id, then cleared with a test on that id', async () => {
    const object = await waitReady(run, RESOURCE.TerraformMachine, 'm-b', MINUTE);
    const lease = `lock-tfstate-default-${object.status?.stateSuffix ?? ''}`;
    const lockInfo = JSON.stringify({
      ID: 'foreign-lock-1',
      Operation: 'OperationTypeApply',
      Who: 'bob@laptop',
      Created: '2026-01-01T00:00:00Z',
    });
    await run.kubectl.run([
      'patch',
      'lease',
      lease,
      '-n',
      run.namespace,
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: { holderIdentity: 'foreign-lock-1' },
        metadata: { annotations: { 'app.terraform.io/lock-info': lockInfo } },
      }),
    ]);
    const unnamed = await captf('unlock', 'terraformmachine/m-b');
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toContain('a foreign holder');
    expect(unnamed.stderr).toContain('--lock-id foreign-lock-1');
    const wrong = await captf('unlock', 'terraformmachine/m-b', '--lock-id', 'another');
    expect(wrong.code).toBe(1);
    // The doc's unlock block as written.
    const done = await doc('A stale state lock', 0, { NAME: 'm-b', LOCK_ID: 'foreign-lock-1' });
    expect(done).toContain('unlocked lock foreign-lock-1');
    const after = JSON.parse(
      await run.kubectl.run(['get', 'lease', lease, '-n', run.namespace, '-o', 'json']),
    ) as {
      spec: { holderIdentity?: string };
      metadata: { annotations?: Record<string, string> };
    };
    expect(after.spec.holderIdentity).toBeUndefined();
    expect(after.metadata.annotations?.['app.terraform.io/lock-info']).toBeUndefined();
    const again = await captf('unlock', 'terraformmachine/m-b');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('the state is not locked');
  });

  it('no output of the plugin holds the canary', () => {
    expect(printed.join('\n')).not.toContain(CANARY);
    expect(printed.length).toBeGreaterThan(10);
  });
});
