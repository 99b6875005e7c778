import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VARIABLES_SECRET_LABELS } from '../../../src/core/variables-opt-in.ts';
import { kubectlFor } from '../../../src/local/kubectl.ts';
import { testStack } from '../../env/index.ts';
import { bindToParkedNode, parkedNode } from '../../env/parked-node.ts';
import {
  containerWaiting,
  createObject,
  createSecret,
  createStepEnv,
  endPod,
  eventsOf,
  eventually,
  finishJob,
  jobFinished,
  jobsOf,
  MODULE_IMAGE,
  patchSpec,
  podOf,
  result,
  runPod,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// The defect classes of issue 10, one test each, against the real API server and Redis (the test plays the
// kubelet). Each names its class; each failed on the main the issue started from (b877087).

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('defects');
});

afterAll(async () => {
  await env?.close();
});

const CANARY = 'tok-123-canary';

/** Creates an Opaque Secret in the env's namespace. */
/** Moves the test clock by `seconds` for the duration of `body`. */
async function later<T>(seconds: number, body: () => Promise<T>): Promise<T> {
  env.clock.advance(seconds);
  try {
    return await body();
  } finally {
    env.clock.advance(-seconds);
  }
}

/** Whether the Job carries `captf.io/bookkept` (read live). */
async function isBookkept(job: string): Promise<boolean> {
  const read = await env.batch.readNamespacedJob({ namespace: env.namespace, name: job });
  return read.metadata?.annotations?.['captf.io/bookkept'] === 'true';
}

/** Applies a manifest with the stack's kubectl (admission policies and bindings). */
async function kubectlApply(manifest: Record<string, unknown>): Promise<void> {
  const stack = testStack();
  await kubectlFor(stack.kubectlPath, stack.kubeconfigPath).run(
    ['apply', '-f', '-'],
    JSON.stringify(manifest),
  );
}

/** Deletes cluster-scoped admission objects by name (best effort: the namespace goes anyway). */
async function kubectlDelete(resource: string, name: string): Promise<void> {
  const stack = testStack();
  await kubectlFor(stack.kubectlPath, stack.kubeconfigPath)
    .run(['delete', resource, name, '--ignore-not-found'])
    .catch(() => undefined);
}

/**
 * A ValidatingAdmissionPolicy (and its binding) limited to this env's namespace: an admission rule a
 * cluster admin might ship, which refuses some of our writes for good (422).
 */
async function refusingPolicy(
  name: string,
  rule: { apiGroups: string[]; resources: string[]; operations: string[] },
  expression: string,
): Promise<() => Promise<void>> {
  await kubectlApply({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ ...rule, apiVersions: ['*'] }] },
      validations: [{ expression, message: `refused by ${name}` }],
    },
  });
  await kubectlApply({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': env.namespace } },
      },
    },
  });
  // Policies take effect asynchronously; callers probe until the refusal is seen.
  return async () => {
    await kubectlDelete('validatingadmissionpolicybinding', name);
    await kubectlDelete('validatingadmissionpolicy', name);
  };
}

describe('issue 10 defect classes', () => {
  it('class 2, redaction that corrupts data: secret values are cut from free text only; outputs, Job names and plan references arrive intact', async () => {
    await createSecret(env, 'backend-east', { region: 'us-east-1' });
    // Variables come only from Secrets that opted in (issue 16); the backend Secret needs no label.
    await createSecret(
      env,
      'creds-east',
      { token: CANARY, unused: 'infrastructure' },
      VARIABLES_SECRET_LABELS,
    );
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-redact-outputs', {
      backend: { secretRef: { name: 'backend-east' } },
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 'creds-east', key: 'token' } }],
    });
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: { kind: 'step', step: 'plan', summary: `Invalid value "${CANARY}" for variable token` },
      }),
    });
    await env.step()(ref);
    const failed = await statusOf(env, ref);
    expect(failed.lastRun?.error?.summary).not.toContain(CANARY);
    expect(JSON.stringify(failed)).not.toContain(CANARY);
    expect(JSON.stringify(await eventsOf(env, ref))).not.toContain(CANARY);

    const second = await later(61, () => stepUntil(env.step(), ref, 'created'));
    await finishJob(env, second.job ?? '', {
      exitCode: 0,
      result: result('apply', 'succeeded', {
        outputs: {
          providerID: 'aws:///us-east-1a/i-0abc',
          addresses: [{ type: 'InternalDNS', address: 'ip-10-0-0-1.us-east-1.compute.internal' }],
        },
      }),
    });
    await env.step()(ref);
    const object = await env.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name);
    expect((object?.spec as { providerID?: string } | undefined)?.providerID).toBe(
      'aws:///us-east-1a/i-0abc',
    );
    const status = await statusOf(env, ref);
    expect(status.addresses).toEqual([
      { type: 'InternalDNS', address: 'ip-10-0-0-1.us-east-1.compute.internal' },
    ]);
    // Only the referenced key is secret: the Secret's other value is an ordinary word in the Ready message.
    expect(status.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      'the infrastructure is provisioned',
    );

    // A Secret holding the object's own name: Job names and the pending plan reference stay intact.
    await createSecret(env, 'self-name', { owner: 'm-redact-self' }, VARIABLES_SECRET_LABELS);
    const self = await startedObject(env, 'TerraformMachine', 'm-redact-self', {
      variablesFrom: [{ name: 'owner', secretKeyRef: { name: 'self-name', key: 'owner' } }],
    });
    expect((await statusOf(env, self.ref)).activeJob?.name).toBe(self.job);
    await finishJob(env, self.job, {
      exitCode: 4,
      result: result('apply', 'blocked', {
        plan: {
          digest: `sha256:${'a'.repeat(64)}`,
          add: 1,
          change: 0,
          destroy: 1,
          destructive: true,
        },
      }),
    });
    await env.step()(self.ref);
    const blocked = await statusOf(env, self.ref);
    expect(blocked.lastRun?.job).toBe(self.job);
    expect(blocked.pendingPlanRef?.name).toContain('m-redact-self');
    const plans = await env.kube.reader.listCustomObjects('TerraformPlan', { namespace: env.namespace });
    expect(plans.map((plan) => plan.metadata.name)).toContain(blocked.pendingPlanRef?.name);
  });

  it('class 3, a rejected write freezes an object: refused outputs, a refused spec write and refused Events never leave a finished Job un-bookkept', async () => {
    // (a) An output the CRD refuses (an address type Cluster API does not know): a failed run naming it.
    const bad = await startedObject(env, 'TerraformMachine', 'm-bad-outputs');
    await finishJob(env, bad.job, {
      exitCode: 0,
      result: result('apply', 'succeeded', {
        outputs: { providerID: 'captf-test://ok', addresses: [{ type: 'Bogus', address: '10.0.0.1' }] },
      }),
    });
    await env.step()(bad.ref);
    await env.step()(bad.ref);
    expect(await isBookkept(bad.job)).toBe(true);
    const badStatus = await statusOf(env, bad.ref);
    expect(badStatus.lastRun).toMatchObject({ job: bad.job, result: 'failed', reason: 'OutputsInvalid' });
    expect(badStatus.lastRun?.error?.summary).toContain('addresses');
    expect(badStatus.waitReason).toBe('Backoff');

    // (b) A spec write an admission policy refuses for good: recorded without it, with a reason and an Event.
    const removeSpecPolicy = await refusingPolicy(
      `captf-test-no-forbidden-${env.namespace}`,
      {
        apiGroups: ['infrastructure.cluster.x-k8s.io'],
        resources: ['terraformmachines'],
        operations: ['UPDATE'],
      },
      "!has(object.spec.providerID) || !object.spec.providerID.startsWith('forbidden://')",
    );
    try {
      const refused = await startedObject(env, 'TerraformMachine', 'm-refused-spec');
      await finishJob(env, refused.job, {
        exitCode: 0,
        result: result('apply', 'succeeded', { outputs: { providerID: 'forbidden://x' } }),
      });
      await eventually(
        async () => {
          // Unshadowed: a dry run cannot know that the API server will refuse the write.
          await env.step({ shadow: false })(refused.ref);
          return isBookkept(refused.job);
        },
        (bookkept) => bookkept,
        30_000,
        'the refused run bookkept',
      );
      const status = await statusOf(env, refused.ref);
      expect(status.lastRun).toMatchObject({ job: refused.job, reason: 'OutputsInvalid' });
      expect(status.lastRun?.error?.summary).toContain('providerID');
      const object = await env.kube.reader.getCustomObject(
        'TerraformMachine',
        env.namespace,
        'm-refused-spec',
      );
      expect(object).toBeDefined();
      expect((object?.spec as { providerID?: string } | undefined)?.providerID).toBeUndefined();
      expect((await eventsOf(env, refused.ref)).some((e) => (e.note ?? '').includes('providerID'))).toBe(
        true,
      );
    } finally {
      await removeSpecPolicy();
    }

    // (c) Events refused (not an outage): best effort; the run is bookkept all the same.
    const removeEventPolicy = await refusingPolicy(
      `captf-test-no-events-${env.namespace}`,
      { apiGroups: ['events.k8s.io', ''], resources: ['events'], operations: ['CREATE'] },
      'false',
    );
    try {
      const quiet = await startedObject(env, 'TerraformMachine', 'm-no-events');
      await finishJob(env, quiet.job, {
        exitCode: 1,
        result: result('apply', 'failed', { error: { kind: 'step', step: 'apply', summary: 'boom' } }),
      });
      await eventually(
        async () => {
          await env.step()(quiet.ref);
          return isBookkept(quiet.job);
        },
        (bookkept) => bookkept,
        30_000,
        'the run bookkept despite refused Events',
      );
      expect((await statusOf(env, quiet.ref)).lastRun).toMatchObject({
        job: quiet.job,
        reason: 'ApplyFailed',
      });
    } finally {
      await removeEventPolicy();
    }
  });

  it('class 4, a state lock held by someone else: a foreign holder is a counted failure (backoff), never an endless uncounted wait', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-foreign-lock');
    await finishJob(env, job, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: { kind: 'step', step: 'plan', summary: 'Error acquiring the state lock' },
        lock: { id: 'lock-foreign', who: 'alice@laptop' },
      }),
    });
    const bookkept = await env.step()(ref);
    expect(bookkept.reason).toBe('Backoff');
    const status = await statusOf(env, ref);
    expect(status.lastRun).toMatchObject({ job, reason: 'ApplyFailed', error: { kind: 'step' } });
    expect(status.waitReason).toBe('Backoff');
    expect(status.conditions?.find((c) => c.type === 'ApplyJobSucceeded')?.status).toBe('False');
    expect((await eventsOf(env, ref)).some((e) => e.reason === 'StateLocked')).toBe(true);
    // A minute later the retry starts (counted: 60 s); an uncounted contended lock would have said 30 s.
    expect(await later(31, () => env.step()(ref))).toMatchObject({ action: 'waiting', reason: 'Backoff' });
  });

  it('class 5, a deleted Job erases its failure and its name: the streak and the attempt survive any deletion, and the API guard tells pods apart by their Job', async () => {
    // A failed Job deleted by a person: the backoff stays, the next attempt is 2 with a new name.
    const first = await startedObject(env, 'TerraformMachine', 'm-deleted-failure');
    await finishJob(env, first.job, {
      exitCode: 1,
      result: result('apply', 'failed', { error: { kind: 'step', step: 'apply', summary: 'boom' } }),
    });
    expect((await env.step()(first.ref)).reason).toBe('Backoff');
    await env.batch.deleteNamespacedJob({
      namespace: env.namespace,
      name: first.job,
      propagationPolicy: 'Background',
    });
    await eventually(
      () => jobsOf(env, first.ref),
      (jobs) => jobs.length === 0,
      30_000,
      'the Job gone',
    );
    expect(await env.step()(first.ref)).toMatchObject({ action: 'waiting', reason: 'Backoff' });
    const retry = await later(61, () => stepUntil(env.step(), first.ref, 'created'));
    expect(retry.job).not.toBe(first.job);
    expect(retry.job).toContain('-apply-a2-');

    // The controller's own late-deadline delete: the deadline kill still counts after the Job is gone.
    const late = await startedObject(env, 'TerraformMachine', 'm-deadline-delete', {
      jobs: { activeDeadlineSeconds: 600, lockTimeoutSeconds: 60 },
    });
    await runPod(env, await podOf(env, late.job));
    expect((await later(600 + 600 + 61, () => env.step()(late.ref))).reason).toBe('JobDeadlineExceeded');
    await eventually(
      () => jobsOf(env, late.ref),
      (jobs) => jobs.every((j) => j.metadata?.name !== late.job),
      30_000,
      'the late Job gone',
    );
    expect(await env.step()(late.ref)).toMatchObject({ action: 'waiting', reason: 'Backoff' });

    // A running Job deleted by a person while its pod lives on (Terminating): nothing new starts under
    // the old name, and the guard holds the next attempt until that pod is gone.
    const running = await startedObject(env, 'TerraformMachine', 'm-deleted-running');
    const pod = await podOf(env, running.job);
    const podName = pod.metadata?.name ?? '';
    await bindToParkedNode(env.core, env.namespace, podName);
    await runPod(env, pod);
    await env.batch.deleteNamespacedJob({
      namespace: env.namespace,
      name: running.job,
      propagationPolicy: 'Background',
    });
    await eventually(
      () => env.core.readNamespacedPod({ namespace: env.namespace, name: podName }),
      (read: V1Pod) => read.metadata?.deletionTimestamp !== undefined,
      30_000,
      'the old pod Terminating',
    );
    const outcomes = [await env.step()(running.ref), await env.step()(running.ref)];
    expect(outcomes.map((o) => o.action)).not.toContain('created');
    expect(outcomes.at(-1)).toMatchObject({ action: 'waiting', reason: 'WaitingForPreviousAttempt' });
    expect(await jobsOf(env, running.ref)).toEqual([]);
  });

  it('class 6, tags are never pinned: the digest the source container ran is pinned, and a drift check runs it', async () => {
    const digest = `sha256:${'b'.repeat(64)}`;
    const imageID = `registry.example.com/modules/demo@${digest}`;
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-pinned');
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded'), imageID });
    await env.step()(ref);
    expect((await statusOf(env, ref)).source?.pinnedImage).toBe(imageID);
    // The drift interval (30 m) carries up to 10 % jitter (DESIGN.md section 3).
    const drift = await later(34 * 60, () => stepUntil(env.step(), ref, 'created'));
    const driftJob = (await jobsOf(env, ref)).find((j) => j.metadata?.name === drift.job);
    expect(driftJob?.metadata?.labels?.['captf.io/op']).toBe('drift');
    expect(driftJob?.spec?.template.spec?.containers.find((c) => c.name === 'source')?.image).toBe(imageID);
    expect(MODULE_IMAGE).not.toBe(imageID);
  });

  it('class 7, pull trouble of the runner image is invisible: any container, the init container included, shows in waitReason within one step and fails as ImagePullFailed at the deadline', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-runner-pull', {
      jobs: { activeDeadlineSeconds: 4, lockTimeoutSeconds: 1 },
    });
    await containerWaiting(env, await podOf(env, job), 'runner', 'ErrImagePull');
    expect(await env.step()(ref)).toMatchObject({ action: 'watching', reason: 'ImagePullBackOff' });
    expect((await statusOf(env, ref)).waitReason).toBe('ImagePullBackOff');
    await jobFinished(env, job);
    await env.step()(ref);
    expect((await statusOf(env, ref)).lastRun).toMatchObject({
      job,
      result: 'failed',
      reason: 'ImagePullFailed',
    });

    const config = await startedObject(env, 'TerraformMachine', 'm-config-error');
    await containerWaiting(env, await podOf(env, config.job), 'source', 'CreateContainerConfigError');
    expect(await env.step()(config.ref)).toMatchObject({
      action: 'watching',
      reason: 'CreateContainerConfigError',
    });
    expect((await statusOf(env, config.ref)).waitReason).toBe('CreateContainerConfigError');
  });

  it("class 8, a duplicate pod's lock report leaks: after C01 no later Job force-unlocks and no ForceUnlocked Event fires", async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-dup-lock');
    const p1 = await podOf(env, job);
    const p1Name = p1.metadata?.name ?? '';
    await runPod(env, p1);
    const p2 = await env.core.createNamespacedPod({
      namespace: env.namespace,
      body: {
        metadata: {
          name: `${job}-extra`,
          labels: p1.metadata?.labels,
          ownerReferences: p1.metadata?.ownerReferences,
        },
        spec: { ...(p1.spec ?? { containers: [] }), nodeName: await parkedNode(env.core) },
      },
    });
    await endPod(env, p2, {
      exitCode: 1,
      result: result('apply', 'failed', {
        error: { kind: 'step', step: 'plan', summary: 'Error acquiring the state lock' },
        lock: { id: 'lock-dup', who: `runner@${p1Name}` },
      }),
    });
    await endPod(env, p1, { exitCode: 0, result: result('apply', 'succeeded') });
    await jobFinished(env, job);
    await env.step()(ref);
    expect((await statusOf(env, ref)).lastRun).toMatchObject({ job, result: 'succeeded' });
    await patchSpec(env, ref, { variables: { size: 'large' } });
    const next = await stepUntil(env.step(), ref, 'created');
    const jobs = await jobsOf(env, ref);
    const nextJob = jobs.find((j) => j.metadata?.name === next.job);
    expect(nextJob?.metadata?.annotations?.['captf.io/force-unlock-id']).toBeUndefined();
    expect((await eventsOf(env, ref)).filter((e) => e.reason === 'ForceUnlocked')).toEqual([]);
  });

  it('class 1 (step level), self-triggered writes: a waiting object is written once, and the step its write wakes writes nothing', async () => {
    const ref = await createObject(
      env,
      'TerraformMachine',
      'm-at-rest',
      {},
      {
        annotations: { 'cluster.x-k8s.io/paused': 'true' },
      },
    );
    await stepUntil(env.step(), ref, 'waiting');
    const entered = await env.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name);
    for (let i = 0; i < 5; i += 1) {
      env.clock.advance(7);
      await env.step()(ref);
    }
    env.clock.advance(-35);
    const after = await env.kube.reader.getCustomObject(ref.kind, ref.namespace, ref.name);
    expect(after?.metadata.resourceVersion).toBe(entered?.metadata.resourceVersion);
  });
});
