import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { KubeConfig, RbacAuthorizationV1Api, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stateEncryptionSecretNames } from '../../../src/core/state-encryption.ts';
import { VARIABLES_SECRET_LABELS } from '../../../src/core/variables-opt-in.ts';
import { keyProviderName } from '../../../src/runner/state-encryption.ts';
import { parseRunConfig, RUN_CONFIG_FILE } from '../../../src/schemas/run-config.ts';
import { stateContentOf } from '../../../src/step/state-content.ts';
import { testStack } from '../../env/index.ts';
import { type RunnerRun, runRunner } from '../runner/runner-process.ts';
import {
  createObject,
  createSecret,
  createStepEnv,
  endPod,
  eventsOf,
  jobFinished,
  patchSpec,
  podOf,
  type StepEnv,
  statusOf,
  stepUntil,
} from './harness.ts';

// Issue 25 item 3: OpenTofu's client-side state encryption, through the real step and Job path. The step
// creates the Job, its per-run Secret and the runner identity (whose Role now names the key Secret); the
// test plays the kubelet by running the real runner and real OpenTofu with that run config, as the Job's
// own ServiceAccount (a TokenRequest token), against the test API server; the next step bookkeeps what the
// runner wrote. The state a module holds secrets in lands in its Secret as ciphertext only.

const CANARY = 'tok-123-canary';
const KEYS = {
  a: 'correct-horse-battery-staple-a',
  b: 'correct-horse-battery-staple-b',
  wrong: 'wrong-horse-battery-staple-c',
};
const KEY_SECRET = 'state-key';
/** A passphrase written over key b in place: the key provider's name stays, the key does not. */
const EDITED = 'edited-in-place-horse-battery';
const NAME = 'enc-m';

let env: StepEnv;
/**
 * Everything the runners printed and kept: the Job logs and the run log Secrets, which must not hold a
 * passphrase or the canary.
 */
const logs: string[] = [];

beforeAll(async () => {
  env = await createStepEnv('enc');
  await createSecret(env, 'module-input', { name: CANARY }, VARIABLES_SECRET_LABELS);
  await createSecret(env, KEY_SECRET, KEYS, VARIABLES_SECRET_LABELS);
});

afterAll(async () => {
  await env?.close();
});

const ref = () => ({ kind: 'TerraformMachine' as const, namespace: env.namespace, name: NAME });
const encryption = (key: keyof typeof KEYS, fallback?: keyof typeof KEYS) => ({
  passphraseSecretRef: { name: KEY_SECRET, key },
  ...(fallback ? { fallback: { passphraseSecretRef: { name: KEY_SECRET, key: fallback } } } : {}),
});

/** What the kubelet gives a pod: the API server's address; the test API server stands in for it. */
function kubeletEnv(): Record<string, string> {
  const url = new URL(testStack().apiServerUrl);
  return { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port };
}

/**
 * Plays the kubelet for `job`: the runner, with the per-run Secret's run config, runs as the Job's
 * ServiceAccount (a token from the TokenRequest API, as a projected volume holds it), and `source` ends
 * with its exit code and result; the state the real backend wrote stays.
 */
async function runJob(job: string): Promise<RunnerRun> {
  const read: V1Job = await env.batch.readNamespacedJob({ namespace: env.namespace, name: job });
  const op = read.metadata?.labels?.['captf.io/op'] ?? '';
  const account = read.spec?.template.spec?.serviceAccountName ?? '';
  const secret = await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`);
  const text = Buffer.from(secret?.data?.[RUN_CONFIG_FILE] ?? '', 'base64').toString('utf8');
  const parsed = parseRunConfig(text);
  if (!parsed.ok) throw new Error(parsed.message);
  // The passphrase never travels in the run config: only where to read it.
  for (const value of Object.values(KEYS)) expect(text).not.toContain(value);
  // Bound to the Job's pod, as the kubelet's projected volume binds it (the run log's write needs the pod).
  const pod = await podOf(env, job);
  const token = await env.core.createNamespacedServiceAccountToken({
    namespace: env.namespace,
    name: account,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
      },
    },
  });
  const serviceAccountDir = await mkdtemp(join(tmpdir(), 'captf-enc-sa-'));
  await writeFile(join(serviceAccountDir, 'token'), token.status?.token ?? '', { mode: 0o600 });
  await writeFile(join(serviceAccountDir, 'ca.crt'), await readFile(testStack().caPath));
  // The token is a bound credential of a real pod: it does not outlive the run in /tmp.
  const run = await runRunner({
    module: 'machine',
    env: kubeletEnv(),
    config: parsed.config,
    flags: [`--op=${op}`, `--service-account-dir=${serviceAccountDir}`],
  }).finally(() => rm(serviceAccountDir, { recursive: true, force: true }));
  logs.push(run.stdout, run.stderr);
  // The runner kept its log (src/core/run-log.ts): its write was admitted; it is checked as the pod log is.
  expect(run.stdout).toContain(`run log Secret captf-log-${job}: `);
  const kept = await env.kube.reader.getSecret(env.namespace, `captf-log-${job}`);
  logs.push(Buffer.from(kept?.data?.log ?? '', 'base64').toString('utf8'));
  await endPod(env, pod, {
    exitCode: run.exitCode ?? 1,
    result: run.result,
    realBackend: true,
  });
  await jobFinished(env, job);
  return run;
}

/** The state Secret as stored: its `tfstate` bytes gunzipped (OpenTofu's kubernetes backend gzips). */
async function storedState(): Promise<{ text: string; json: Record<string, unknown> }> {
  const secret = await env.kube.reader.getSecret(env.namespace, `tfstate-default-m-${NAME}`);
  const raw = Buffer.from(secret?.data?.tfstate ?? '', 'base64');
  const text = gunzipSync(raw).toString('utf8');
  return { text, json: JSON.parse(text) as Record<string, unknown> };
}

/** Starts the object's next Job (steps until one is created) and runs it; bookkeeps it. */
async function nextRun(): Promise<{ job: string; run: RunnerRun }> {
  const created = await stepUntil(env.step(), ref(), 'created');
  const job = created.job ?? '';
  const run = await runJob(job);
  await stepUntil(env.step(), ref(), 'bookkept');
  return { job, run };
}

/** Writes key b of the key Secret in place (a person rotating wrongly, then undoing it). */
async function setKeyB(passphrase: string): Promise<void> {
  const secret = await env.core.readNamespacedSecret({ namespace: env.namespace, name: KEY_SECRET });
  const data = { ...secret.data, b: Buffer.from(passphrase).toString('base64') };
  await env.core.replaceNamespacedSecret({
    namespace: env.namespace,
    name: KEY_SECRET,
    body: { ...secret, data },
  });
}

/** Nothing the controller wrote or the runner printed holds a passphrase or the module's secret. */
async function expectNoSecretsLeaked(): Promise<void> {
  const written = JSON.stringify({ status: await statusOf(env, ref()), events: await eventsOf(env, ref()) });
  for (const secret of [...Object.values(KEYS), EDITED, CANARY]) {
    expect(written).not.toContain(secret);
    for (const log of logs) expect(log).not.toContain(secret);
  }
}

describe('encrypted state through the step and a real OpenTofu (issue 25 item 3)', () => {
  it('E1 apply: the state Secret holds ciphertext only, the Role grants the key Secret, the step reads it as encrypted', async () => {
    await createObject(env, 'TerraformMachine', NAME, {
      variablesFrom: [{ name: 'name', secretKeyRef: { name: 'module-input', key: 'name' } }],
      stateEncryption: encryption('a'),
    });
    const { job, run } = await nextRun();
    expect(run.result).toMatchObject({ op: 'apply', result: 'succeeded' });
    const status = await statusOf(env, ref());
    expect(status.lastRun).toMatchObject({ job, result: 'succeeded', reason: 'ApplySucceeded' });

    const state = await storedState();
    expect(state.json.resources).toBeUndefined();
    expect(typeof state.json.encrypted_data).toBe('string');
    expect(Object.keys(state.json.meta as object)).toEqual([
      `key_provider.pbkdf2.${keyProviderName({ name: KEY_SECRET, key: 'a' })}`,
    ]);
    expect(state.text).not.toContain(CANARY);
    expect(state.text).not.toContain('terraform_data');
    const secret = await env.kube.reader.getSecret(env.namespace, `tfstate-default-m-${NAME}`);
    expect(stateContentOf(secret)).toBe('encrypted');

    const config = new KubeConfig();
    config.loadFromFile(testStack().kubeconfigPath);
    const role = await config
      .makeApiClient(RbacAuthorizationV1Api)
      .readNamespacedRole({ namespace: env.namespace, name: `captf-runner-m-${NAME}` });
    expect(role.rules).toContainEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: stateEncryptionSecretNames(encryption('a')),
      verbs: ['get'],
    });
    await expectNoSecretsLeaked();
  });

  it('E2 a drift check opens the state and finds no drift', async () => {
    // The check is due 30 min after the apply; the clock goes back before the Job runs, so the Job's own
    // (real) start is not hours behind the step's clock (a deadline the step would enforce).
    env.clock.advance(2 * 3600);
    let job: string;
    try {
      job = (await stepUntil(env.step(), ref(), 'created')).job ?? '';
    } finally {
      env.clock.advance(-2 * 3600);
    }
    const run = await runJob(job);
    await stepUntil(env.step(), ref(), 'bookkept');
    expect(run.result).toMatchObject({ op: 'drift', result: 'succeeded', drift: { detected: false } });
    expect((await statusOf(env, ref())).lastRun).toMatchObject({ op: 'drift', reason: 'DriftChecked' });
  });

  it('E3 rotation: a new passphrase with the old as fallback; the next apply writes the state under the new one', async () => {
    await patchSpec(env, ref(), { stateEncryption: encryption('b', 'a') });
    const { run } = await nextRun();
    expect(run.result).toMatchObject({ op: 'apply', result: 'succeeded' });
    const state = await storedState();
    expect(Object.keys(state.json.meta as object)).toEqual([
      `key_provider.pbkdf2.${keyProviderName({ name: KEY_SECRET, key: 'b' })}`,
    ]);
    expect(state.text).not.toContain(CANARY);
  });

  it('E4 a wrong passphrase fails at init with error.kind state-decryption, counted, nothing written', async () => {
    const before = (await storedState()).text;
    await patchSpec(env, ref(), { stateEncryption: encryption('wrong') });
    const { job, run } = await nextRun();
    expect(run.exitCode).not.toBe(0);
    expect(run.result.error).toMatchObject({ kind: 'state-decryption', step: 'init' });
    const status = await statusOf(env, ref());
    expect(status.lastRun).toMatchObject({
      job,
      result: 'failed',
      reason: 'StateDecryptionFailed',
      error: { kind: 'state-decryption', step: 'init' },
    });
    expect(status.lastRun?.error?.summary).toMatch(/decryption failed/);
    expect(status.conditions?.find((c) => c.type === 'ApplyJobSucceeded')).toMatchObject({
      status: 'False',
      reason: 'StateDecryptionFailed',
    });
    expect((await storedState()).text).toBe(before);
    await expectNoSecretsLeaked();
  });

  it('E4b key b edited in place: OpenTofu finds its key provider, but the key fails authentication', async () => {
    await setKeyB(EDITED);
    await patchSpec(env, ref(), { stateEncryption: encryption('b') });
    const { run } = await nextRun();
    expect(run.result.error).toMatchObject({ kind: 'state-decryption', step: 'init' });
    expect(run.result.error?.summary).toMatch(/message authentication failed/);
    expect((await statusOf(env, ref())).lastRun?.error?.kind).toBe('state-decryption');
    await expectNoSecretsLeaked();
  });

  it('E5 with key b put back, delete destroys, and the encrypted state goes with the finalizer', async () => {
    await setKeyB(KEYS.b);
    await env.custom.deleteNamespacedCustomObject({
      group: 'infrastructure.cluster.x-k8s.io',
      version: 'v1alpha1',
      plural: 'terraformmachines',
      namespace: env.namespace,
      name: NAME,
    });
    const created = await stepUntil(env.step(), ref(), 'created');
    const run = await runJob(created.job ?? '');
    expect(run.result).toMatchObject({ op: 'destroy', result: 'succeeded' });
    // Bookkept and finalized: its newest destroy succeeded after its newest apply, so the state the
    // controller cannot read holds nothing, and goes with the finalizer (no StateKept).
    await stepUntil(env.step(), ref(), 'gone');
    expect(await env.kube.reader.getSecret(env.namespace, `tfstate-default-m-${NAME}`)).toBeUndefined();
    for (const log of logs)
      for (const secret of [...Object.values(KEYS), EDITED, CANARY]) expect(log).not.toContain(secret);
  });
});
