import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRelayProcess } from '../../../functions/relay.ts';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createStepEnv,
  eventually,
  finishJob,
  jobsOf,
  podOf,
  readObject,
  result,
  type StepEnv,
  statusOf,
} from '../step/harness.ts';
import { handlersOver } from './event-app.ts';

// Issue 23 item 2: our pod finalizer `captf.io/result` never outlives what could read it. The events alone
// (the bundled relay → POST /events → the real step, API server, garbage collector and namespace controller)
// release a held pod within seconds: no /tick is sent, so the sweep, which used to be the only way out
// (test/integration/step/pod-finalizer.test.ts C14), never runs here. The test plays the kubelet. A deleted
// namespace's pods go the same way; an object that ran still needs its destroy, which a terminating
// namespace refuses (docs/runbooks/stuck-destroy.md), so that namespace stays until a person acts.

/** Well under the sweep's default 10 min period; the release takes one event and one step. */
const RELEASED_WITHIN_MS = 20_000;

let env: StepEnv;
/** A second namespace, deleted whole by the second test. */
let doomed: StepEnv;
let app: FastifyInstance;
let url: string;
const answers: string[] = [];

beforeAll(async () => {
  env = await createStepEnv('podrel');
  doomed = await createStepEnv('podrel-ns');
  const watched = `${env.namespace},${doomed.namespace}`;
  app = handlersOver(env, { configEnv: { CAPTF_WATCH_NAMESPACES: watched } });
  // Each answer about a pod, printed when a test fails: which step it ran, with what outcome.
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.url === '/events' && String(request.headers['ce-type'] ?? '').length > 0)
      answers.push(
        `${request.headers['ce-type']} ${request.headers['ce-subject']}: ${reply.statusCode} ${String(payload).slice(0, 300)}`,
      );
    return payload;
  });
  url = await app.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  await app?.close();
  for (const scope of [env, doomed]) {
    const pods = await scope?.core.listNamespacedPod({ namespace: scope.namespace }).catch(() => undefined);
    for (const pod of pods?.items ?? [])
      await scope.kube.writer
        .removePodFinalizer(scope.namespace, pod.metadata?.name ?? '', POD_RESULT_FINALIZER)
        .catch(() => undefined);
  }
  // The applied object in the deleted namespace keeps its finalizer (its destroy cannot run there): the
  // runbook's last resort, so the namespace can go.
  await doomed?.custom
    .patchNamespacedCustomObject(
      {
        ...CUSTOM_RESOURCES.TerraformMachine,
        namespace: doomed.namespace,
        name: 'm-doomed',
        body: { metadata: { finalizers: null } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    .catch(() => undefined);
  await doomed?.close();
  await env?.close();
});

/** Runs the bundled relay over both namespaces, in `mode`, with no timer (so no /tick, no sweep). */
async function withRelay<T>(mode: 'ref' | 'resource', body: () => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const relay = runRelayProcess(
    {
      CAPTF_HANDLER_URL: url,
      CAPTF_AUTH_DISABLED: 'true',
      REDIS_URL: testStack().redisUrl,
      KUBECONFIG: testStack().kubeconfigPath,
      CAPTF_KEY_PREFIX: env.keyPrefix,
      CAPTF_WATCH_NAMESPACES: `${env.namespace},${doomed.namespace}`,
      CAPTF_RELAY_MODE: mode,
      CAPTF_TICK_INTERVAL_MS: '0',
      LOG_LEVEL: 'silent',
    },
    stop.signal,
  );
  try {
    return await body();
  } catch (error) {
    console.log(`[pod-release-events] /events answers:\n${answers.join('\n')}`);
    throw error;
  } finally {
    stop.abort();
    await relay;
  }
}

async function readPod(scope: StepEnv, name: string): Promise<V1Pod | undefined> {
  return scope.core.readNamespacedPod({ namespace: scope.namespace, name }).catch(() => undefined);
}

/** The first Job the events start for `ref`. */
async function firstJob(scope: StepEnv, name: string): Promise<string> {
  const ref = { kind: 'TerraformMachine' as const, namespace: scope.namespace, name };
  const [job] = await eventually(
    () => jobsOf(scope, ref),
    (jobs) => jobs.length > 0,
    60_000,
    `a Job of ${name} started by events`,
  );
  return job?.metadata?.name ?? '';
}

describe('a held pod is released by its own event, not by the sweep', () => {
  it.each(['resource', 'ref'] as const)(
    '(%s mode) a bookkept Job deleted by a user: its pod loses our finalizer on the pod event and goes',
    async (mode) => {
      await withRelay(mode, async () => {
        const name = `m-user-${mode}`;
        const ref = { kind: 'TerraformMachine' as const, namespace: env.namespace, name };
        await createObject(env, 'TerraformMachine', name);
        const job = await firstJob(env, name);
        const pod = (await podOf(env, job)).metadata?.name ?? '';
        await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
        await eventually(
          () => statusOf(env, ref),
          (status) => status.lastRun?.job === job,
          60_000,
          `${job} bookkept by its event`,
        );
        // Bookkept and not deleted: the pod keeps the finalizer (no write per run) until its Job goes.
        expect((await readPod(env, pod))?.metadata?.finalizers).toContain(POD_RESULT_FINALIZER);

        const deletedAt = Date.now();
        await env.batch.deleteNamespacedJob({
          namespace: env.namespace,
          name: job,
          propagationPolicy: 'Background',
        });
        await eventually(
          () => readPod(env, pod),
          (read) => read === undefined,
          RELEASED_WITHIN_MS,
          `pod ${pod} released and gone without a sweep`,
        );
        console.log(
          `[pod-release-events] ${mode}: pod gone ${Date.now() - deletedAt} ms after its Job's deletion`,
        );
      });
    },
    120_000,
  );

  it('a namespace holding our applied object, its Job and its pod is deleted: the pod goes at once; its state Secret goes with the namespace, so the object waits StateMissing, never destroying from nothing', async () => {
    await withRelay('ref', async () => {
      const name = 'm-doomed';
      const ref = { kind: 'TerraformMachine' as const, namespace: doomed.namespace, name };
      await createObject(doomed, 'TerraformMachine', name);
      const job = await firstJob(doomed, name);
      const pod = (await podOf(doomed, job)).metadata?.name ?? '';
      await finishJob(doomed, job, { exitCode: 0, result: result('apply', 'succeeded') });
      await eventually(
        () => statusOf(doomed, ref),
        (status) => status.lastRun?.job === job,
        60_000,
        `${job} bookkept by its event`,
      );

      const deletedAt = Date.now();
      await doomed.core.deleteNamespace({ name: doomed.namespace });
      // The namespace controller deletes the pod first; its event releases it (its Job is bookkept).
      await eventually(
        () => readPod(doomed, pod),
        (read) => read === undefined,
        RELEASED_WITHIN_MS,
        `pod ${pod} released and gone without a sweep`,
      );
      console.log(`[pod-release-events] namespace: pod gone ${Date.now() - deletedAt} ms after its deletion`);
      // The namespace's Secrets go with it, the object's state among them (docs/runbooks/stuck-destroy.md):
      // a destroy now would succeed destroying nothing and let the finalizer go, leaving the infrastructure
      // running. The object says its state is lost instead, and starts nothing.
      const state = 'tfstate-default-m-m-doomed';
      await eventually(
        () => doomed.kube.reader.getSecret(doomed.namespace, state),
        (secret) => secret === undefined,
        60_000,
        `${state} deleted with the namespace`,
      );
      // The namespace controller deletes kinds in no set order: the Secret may go while the object is not
      // yet marked for deletion, and an applied object that is not deleting is UpToDate without reading
      // its state (a step about nothing that changed costs nothing).
      await eventually(
        () => readObject(doomed, ref),
        (object) => object.metadata?.deletionTimestamp !== undefined,
        60_000,
        `${name} marked for deletion with the namespace`,
      );
      // The relay's handler steps it too, so a step may first meet its write (Conflict) and read again.
      const outcome = await eventually(
        () => doomed.step()(ref),
        (answer) => answer.reason !== 'Conflict' && answer.reason !== 'StepLockHeld',
        60_000,
        'a step of the object that is not turned back by another',
      );
      expect(outcome).toMatchObject({ action: 'waiting', reason: 'StateMissing' });
      expect(outcome.message).toContain(`${state} is missing`);
    });
  }, 180_000);
});
