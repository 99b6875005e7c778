import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Job, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { runLogSecretName } from '../../../src/core/run-log.ts';
import { VARIABLES_SECRET_LABELS } from '../../../src/core/variables-opt-in.ts';
import { parseRunConfig, RUN_CONFIG_FILE } from '../../../src/schemas/run-config.ts';
import { testStack } from '../../env/index.ts';
import { FIXTURES, type RunnerRun, runRunner } from '../runner/runner-process.ts';
import {
  createObject,
  createSecret,
  createStepEnv,
  endPod,
  eventually,
  jobFinished,
  patchSpec,
  podOf,
  readObject,
  type StepEnv,
  stepUntil,
} from './harness.ts';

// Run logs after the pod (src/core/run-log.ts), through the real step and Job path: the step creates the
// Job, its per-run Secret (whose run config names the log Secret) and the runner identity; the test plays
// the kubelet by running the real runner and real OpenTofu as the Job's ServiceAccount with a token bound
// to the Job's pod, as a projected volume holds it. The runner writes `captf-log-<job>` as it exits; the
// log outlives the Job and its pod, pruning removes it with its Job, the garbage collector with its
// object. The canaries (a Secret-fed variable, bootstrap data) never reach a stored log.

const CANARY = 'tok-123-canary';
const BOOTSTRAP_CANARY = 'boot-456-canary';
const MODULE = join(FIXTURES, 'run-log');

let env: StepEnv;
/** The token of the last pod a test ran, while its pod exists. */
const runners = new Map<string, { token: string; pod: V1Pod }>();

beforeAll(async () => {
  env = await createStepEnv('runlog');
  await createSecret(env, 'module-input', { token: CANARY }, VARIABLES_SECRET_LABELS);
});

afterAll(async () => {
  await env?.close();
});

const ref = (name: string) => ({ kind: 'TerraformMachine' as const, namespace: env.namespace, name });

/** What the kubelet gives a pod: the API server's address; the test API server stands in for it. */
function kubeletEnv(): Record<string, string> {
  const url = new URL(testStack().apiServerUrl);
  return { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port };
}

/** A CoreV1 client as the holder of `token` (a runner's ServiceAccount). */
function coreAs(token: string): CoreV1Api {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'test', server: testStack().apiServerUrl, caFile: testStack().caPath }],
    users: [{ name: 'runner', token }],
    contexts: [{ name: 'runner', cluster: 'test', user: 'runner' }],
    currentContext: 'runner',
  });
  return config.makeApiClient(CoreV1Api);
}

/**
 * Plays the kubelet for `job`: a token bound to the Job's pod for its ServiceAccount, the runner with the
 * per-run Secret's run config (plus bootstrap data, as the controller passes a Cluster API Machine's), then
 * `source` ends with the runner's exit code and result.
 */
async function runJob(job: string): Promise<RunnerRun> {
  const read: V1Job = await env.batch.readNamespacedJob({ namespace: env.namespace, name: job });
  const op = read.metadata?.labels?.['captf.io/op'] ?? '';
  const account = read.spec?.template.spec?.serviceAccountName ?? '';
  const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
  const parsed = parseRunConfig(
    Buffer.from(secret?.data?.[RUN_CONFIG_FILE] ?? '', 'base64').toString('utf8'),
  );
  if (!parsed.ok) throw new Error(parsed.message);
  const pod = await podOf(env, job);
  const token =
    (
      await env.core.createNamespacedServiceAccountToken({
        namespace: env.namespace,
        name: account,
        body: {
          spec: {
            audiences: [],
            expirationSeconds: 3600,
            boundObjectRef: {
              apiVersion: 'v1',
              kind: 'Pod',
              name: pod.metadata?.name,
              uid: pod.metadata?.uid,
            },
          },
        },
      })
    ).status?.token ?? '';
  runners.set(job, { token, pod });
  const serviceAccountDir = await mkdtemp(join(tmpdir(), 'captf-log-sa-'));
  await writeFile(join(serviceAccountDir, 'token'), token, { mode: 0o600 });
  await writeFile(join(serviceAccountDir, 'ca.crt'), await readFile(testStack().caPath));
  // The token is a bound credential of a real pod: it does not outlive the run in /tmp.
  const run = await runRunner({
    module: MODULE,
    env: kubeletEnv(),
    config: {
      ...parsed.config,
      contractInputs: { ...parsed.config.contractInputs, bootstrap_data: BOOTSTRAP_CANARY },
      sensitiveContractInputs: [...parsed.config.sensitiveContractInputs, 'bootstrap_data'],
    },
    flags: [`--op=${op}`, `--service-account-dir=${serviceAccountDir}`],
  }).finally(() => rm(serviceAccountDir, { recursive: true, force: true }));
  await endPod(env, pod, { exitCode: run.exitCode ?? 1, result: run.result, realBackend: true });
  await jobFinished(env, job);
  return run;
}

/** Starts the object's next Job, runs it and bookkeeps it. */
async function nextRun(name: string): Promise<{ job: string; run: RunnerRun }> {
  const created = await stepUntil(env.step(), ref(name), 'created');
  const job = created.job ?? '';
  const run = await runJob(job);
  await stepUntil(env.step(), ref(name), 'bookkept');
  return { job, run };
}

async function logSecret(job: string): Promise<V1Secret | undefined> {
  return env.kube.reader.getSecret(env.namespace, runLogSecretName(job));
}

function logText(secret: V1Secret | undefined): string {
  return Buffer.from(secret?.data?.log ?? '', 'base64').toString('utf8');
}

/** The Secret's size as the API server returns it (JSON; etcd keeps it as protobuf, a little smaller). */
function storedBytes(secret: V1Secret | undefined): number {
  return Buffer.byteLength(JSON.stringify(secret));
}

/**
 * Deletes a Job as a person would (its pods go with it) and waits until both are gone. The pod's result
 * finalizer goes as a step releases it once the pod's deletion reaches it (src/core/pod-release.ts: a
 * bookkept Job's pod), with the controller's own write.
 */
async function deleteJobAndPod(job: string): Promise<void> {
  const pod = (await podOf(env, job)).metadata?.name ?? '';
  await env.batch.deleteNamespacedJob({
    namespace: env.namespace,
    name: job,
    propagationPolicy: 'Background',
  });
  await env.kube.writer.removePodFinalizer(env.namespace, pod, POD_RESULT_FINALIZER);
  await eventually(
    async () => ({
      jobs: (
        await env.batch.listNamespacedJob({ namespace: env.namespace, fieldSelector: `metadata.name=${job}` })
      ).items.length,
      pods: (await env.core.listNamespacedPod({ namespace: env.namespace, labelSelector: `job-name=${job}` }))
        .items.length,
    }),
    (gone) => gone.jobs === 0 && gone.pods === 0,
    60_000,
    `Job ${job} and its pod gone`,
  );
}

/** The figures the report quotes, printed once per run log. */
function report(what: string, secret: V1Secret | undefined): void {
  process.stdout.write(
    `run-log figures: ${what}: log ${Buffer.byteLength(logText(secret))} bytes, Secret ${storedBytes(secret)} bytes as returned\n`,
  );
}

const failing = 'log-fail';
const passing = 'log-pass';
let failedJob = '';
let passedJobs: string[] = [];

describe('run logs after the pod', () => {
  it('R1 a failed run leaves its log: every step, the error, no canary; readable after its Job and pod are gone', async () => {
    await createObject(env, 'TerraformMachine', failing, {
      variables: { fail: true },
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 'module-input', key: 'token' } }],
    });
    const { job, run } = await nextRun(failing);
    failedJob = job;
    expect(run.result).toMatchObject({ op: 'apply', result: 'failed', error: { step: 'plan' } });
    // The pod log itself would have shown both canaries without redaction (the module quotes them).
    expect(run.stdout + run.stderr).toContain('[redacted]');
    await deleteJobAndPod(job);
    const secret = await logSecret(job);
    report('failed apply', secret);
    expect(secret?.type).toBe('captf.io/run-log');
    const object = await readObject(env, ref(failing));
    expect(secret?.metadata?.labels).toMatchObject({
      'captf.io/managed': 'true',
      'captf.io/owner-kind': 'TerraformMachine',
      'captf.io/owner-name': failing,
      'captf.io/owner-uid': object.metadata.uid,
      'captf.io/op': 'apply',
      'captf.io/attempt': '1',
      'captf.io/job': job,
      'captf.io/run-log': 'true',
    });
    expect(secret?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'TerraformMachine',
        uid: object.metadata.uid,
        blockOwnerDeletion: false,
      }),
    ]);
    expect(secret?.metadata?.annotations).toMatchObject({
      'captf.io/log-truncated-bytes': '0',
      'captf.io/log-complete': 'true',
    });
    // The run's start, for the history once the Job is gone: before the Secret, made as the run ended (whose
    // creationTimestamp is cut to the second: a failed plan may take less than one).
    const startedAt = Date.parse(secret?.metadata?.annotations?.['captf.io/started-at'] ?? '');
    expect(startedAt).toBeGreaterThan(0);
    expect(startedAt).toBeLessThan((secret?.metadata?.creationTimestamp?.getTime() ?? 0) + 1000);
    const log = logText(secret);
    for (const step of ['init', 'validate', 'plan']) expect(log).toContain(`captf-runner: step ${step}: `);
    expect(log).toContain('refused token [redacted] with bootstrap [redacted]');
    expect(log).toContain('result failed');
    expect(log).not.toContain(CANARY);
    expect(log).not.toContain(BOOTSTRAP_CANARY);
    // Each line is one the pod printed (stdout and stderr interleaved as they came).
    for (const line of log.split('\n')) expect(run.stdout + run.stderr).toContain(line);
  });

  it('R2 a successful run leaves its log too; pruning past the history limit removes the old one with its Job', async () => {
    await createObject(env, 'TerraformMachine', passing, {
      variables: { fail: false },
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 'module-input', key: 'token' } }],
      jobs: { successfulJobsHistoryLimit: 1 },
    });
    const first = await nextRun(passing);
    expect(first.run.result).toMatchObject({ op: 'apply', result: 'succeeded' });
    const secret = await logSecret(first.job);
    report('successful apply', secret);
    const log = logText(secret);
    for (const step of ['init', 'validate', 'plan', 'show-json', 'apply'])
      expect(log).toContain(`captf-runner: step ${step}: `);
    expect(log).toContain('result succeeded');
    expect(log).not.toContain(CANARY);
    expect(log).not.toContain(BOOTSTRAP_CANARY);

    // A second apply (new inputs): the history keeps one success, so the first Job and its log go.
    await patchSpec(env, ref(passing), { variables: { fail: false, other: 'x' } });
    const second = await nextRun(passing);
    expect(second.run.result).toMatchObject({ op: 'apply', result: 'succeeded' });
    passedJobs = [first.job, second.job];
    await eventually(
      () => logSecret(first.job),
      (gone) => gone === undefined,
      30_000,
      `log of ${first.job} pruned`,
    );
    expect(await logSecret(second.job)).toBeDefined();
  });

  it("R3 another object's runner identity can neither read a log nor create one for another Job", async () => {
    const own = runners.get(passedJobs[1] ?? '');
    if (own === undefined) throw new Error('no runner of the second run');
    // Its Job is retained, so its pod is there and the token bound to it still authenticates.
    const core = coreAs(own.token);
    const denied = async (call: () => Promise<unknown>) => {
      try {
        await call();
        return 'allowed';
      } catch (error) {
        return String((error as { body?: string }).body ?? error);
      }
    };
    expect(
      await denied(() =>
        core.readNamespacedSecret({ namespace: env.namespace, name: runLogSecretName(failedJob) }),
      ),
    ).toContain('Forbidden');
    expect(
      await denied(() =>
        core.readNamespacedSecret({ namespace: env.namespace, name: runLogSecretName(passedJobs[1] ?? '') }),
      ),
    ).toContain('Forbidden');
    const object = await readObject(env, ref(passing));
    const forged = (job: string) => ({
      metadata: {
        name: runLogSecretName(job),
        labels: {
          'captf.io/job': job,
          'captf.io/run-log': 'true',
          'captf.io/owner-uid': object.metadata.uid,
        },
        ownerReferences: [
          {
            apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
            kind: 'TerraformMachine',
            name: passing,
            uid: object.metadata.uid,
            controller: true,
            blockOwnerDeletion: false,
          },
        ],
      },
      type: 'captf.io/run-log',
      stringData: { log: 'forged' },
    });
    // Another Job's log (the failing object's), and any other Secret: refused by admission.
    expect(
      await denied(() => core.createNamespacedSecret({ namespace: env.namespace, body: forged(failedJob) })),
    ).toContain('captf-runner-secret-writes');
    expect(
      await denied(() =>
        core.createNamespacedSecret({
          namespace: env.namespace,
          body: { metadata: { name: 'anything' }, stringData: { a: 'b' } },
        }),
      ),
    ).toContain('captf-runner-secret-writes');
    expect(
      await denied(() =>
        core.deleteNamespacedSecret({ namespace: env.namespace, name: runLogSecretName(failedJob) }),
      ),
    ).toContain('captf-runner-secret-writes');
    expect(await logSecret(failedJob)).toBeDefined();
    // Its own Job's log past 64 KiB is refused by admission (which counts base64 characters, so in groups
    // of 3 bytes); at 64 KiB admission lets it through (and the API server answers that it exists: the
    // runner wrote it already).
    const ownJob = passedJobs[1] ?? '';
    const sized = (bytes: number) => ({ ...forged(ownJob), stringData: { log: 'x'.repeat(bytes) } });
    expect(
      await denied(() =>
        core.createNamespacedSecret({ namespace: env.namespace, body: sized(64 * 1024 + 3) }),
      ),
    ).toContain('captf-runner-secret-writes');
    expect(
      await denied(() => core.createNamespacedSecret({ namespace: env.namespace, body: sized(64 * 1024) })),
    ).toContain('AlreadyExists');
  });

  it('R4 deleting the object removes its logs (the garbage collector, by their owner reference)', async () => {
    const object = await readObject(env, ref(failing));
    const logs = async () =>
      (
        await env.core.listNamespacedSecret({
          namespace: env.namespace,
          labelSelector: `captf.io/owner-uid=${object.metadata.uid},captf.io/run-log=true`,
        })
      ).items;
    expect((await logs()).length).toBeGreaterThan(0);
    await env.custom.deleteNamespacedCustomObject({
      group: 'infrastructure.cluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'terraformmachines',
      namespace: env.namespace,
      name: failing,
    });
    // Its only apply failed at the plan, leaving nothing in its state: it goes without a destroy (DESIGN.md
    // section 3 row 1), and its logs go with it.
    const gone = await stepUntil(env.step(), ref(failing), 'finalized');
    expect(gone.reason).toBe('DeletingWithoutState');
    await eventually(logs, (left) => left.length === 0, 60_000, `logs of ${failing} collected`);
  });
});
