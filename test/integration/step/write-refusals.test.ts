import {
  AdmissionregistrationV1Api,
  ApiException,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1NamedRuleWithOperations,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { buildPlanManifest } from '../../../src/core/plan-manifest.ts';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createStepEnv,
  eventsOf,
  eventually,
  finishJob,
  jobsOf,
  patchSpec,
  readObject,
  refuseJobs,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

// Issue 23 item 9: a write of any kind the API server refuses for good — here a real
// ValidatingAdmissionPolicy denying one write at a time, and a real ResourceQuota — ends as the
// `WriteRefused` condition and wait on the object, naming the write and the API server's message (or, when
// the object's own status write is the refused one, a `WriteRefused` Warning Event), and the object
// converges once the policy or quota is removed. One object per scenario, each policy scoped to this file's
// namespace and that object's names, so the scenarios run side by side.

let env: StepEnv;
let quotaEnv: StepEnv;
let admission: AdmissionregistrationV1Api;

beforeAll(async () => {
  [env, quotaEnv] = await Promise.all([createStepEnv('refusals'), createStepEnv('refusal-quota')]);
  const config = new KubeConfig();
  config.loadFromFile(testStack().kubeconfigPath);
  admission = config.makeApiClient(AdmissionregistrationV1Api);
});

afterAll(async () => {
  await Promise.all([env?.close(), quotaEnv?.close()]);
});

/** Whether a request is refused (403 from a policy or a quota); anything else passes or is a test error. */
async function refused(request: () => Promise<unknown>): Promise<boolean> {
  try {
    await request();
    return false;
  } catch (error) {
    if (error instanceof ApiException && error.code === 403) return true;
    throw error;
  }
}

const DRY_RUN = 'All';
const DIGEST = `sha256:${'e'.repeat(64)}`;

/**
 * Puts a ValidatingAdmissionPolicy (and its binding) in force that refuses the writes `rules` match in this
 * file's namespace where `allowed` (CEL) is false; waits until `probe`, a dry-run write it must refuse, is
 * refused (the API server's policy informer). Answers how to lift it, which waits until `probe` passes.
 */
async function deny(
  label: string,
  rules: V1NamedRuleWithOperations[],
  allowed: string,
  probe: () => Promise<unknown>,
): Promise<{ lift(): Promise<void>; message: string }> {
  const name = `${env.namespace}-${label}`;
  const message = `test policy ${label} refuses this write`;
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: rules,
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': env.namespace } },
        },
        validations: [{ expression: allowed, message, reason: 'Forbidden' }],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'] } },
  });
  await eventually(
    () => refused(probe),
    (is) => is,
    60_000,
    `policy ${label} in force`,
  );
  return {
    message,
    lift: async () => {
      await admission.deleteValidatingAdmissionPolicyBinding({ name });
      await admission.deleteValidatingAdmissionPolicy({ name });
      await eventually(
        () => refused(probe),
        (is) => !is,
        60_000,
        `policy ${label} lifted`,
      );
    },
  };
}

/** The object shows the refusal: `waitReason` and the condition naming the write and the answer. */
function expectRefusalShown(status: TargetStatus, ...words: string[]): void {
  expect(status.waitReason).toBe('WriteRefused');
  const condition = status.conditions?.find((c) => c.type === 'WriteRefused');
  expect(condition).toMatchObject({ status: 'True', reason: 'WriteRefused' });
  for (const word of words) expect(condition?.message).toContain(word);
}

function expectRefusalGone(status: TargetStatus): void {
  expect(status.waitReason).not.toBe('WriteRefused');
  expect(status.conditions?.some((c) => c.type === 'WriteRefused')).toBe(false);
}

function expectRefusedOutcome(outcome: StepOutcome): void {
  expect(outcome).toMatchObject({ action: 'waiting', reason: 'WriteRefused', requeueAfterSeconds: 60 });
}

/** Steps past the finalizer write to the first step that does more. */
async function created(e: StepEnv, name: string): Promise<ObjectRef> {
  const ref = await createObject(e, 'TerraformMachine', name);
  expect((await e.step()(ref)).reason).toBe('FinalizerAdded');
  return ref;
}

describe.concurrent('a refused write is shown on the object and heals once lifted', () => {
  it('Job create refused by a ResourceQuota (count/jobs.batch: 0)', async () => {
    const e = quotaEnv;
    const quota = await refuseJobs(e);
    const ref = await created(e, 'm-quota');
    const outcome = await e.step()(ref);
    expectRefusedOutcome(outcome);
    expectRefusalShown(await statusOf(e, ref), 'create Job', 'captf-m-m-quota-apply-a1-', 'Forbidden');
    expect(await jobsOf(e, ref)).toEqual([]);
    // Nothing of the run exists: its leases went back (section 5 step 8).
    expect(await e.redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });

    await quota.lift();
    expect((await e.step()(ref)).action).toBe('created');
    const status = await statusOf(e, ref);
    expectRefusalGone(status);
    expect(status.activeJob?.name).toMatch(/^captf-m-m-quota-apply-a1-/);
  });

  it('runner identity write refused (its ServiceAccount)', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-identity');
    const account = 'captf-runner-m-m-identity';
    const policy = await deny(
      'identity',
      [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['serviceaccounts'] }],
      `object.metadata.name != '${account}'`,
      () =>
        env.core.createNamespacedServiceAccount({
          namespace: env.namespace,
          dryRun: DRY_RUN,
          body: { metadata: { name: account } },
        }),
    );
    try {
      // The finalizer step's head start on the identity (src/core/runner-setup.ts) is refused too, and left
      // to the Job step, which records the refusal.
      expect((await env.step()(ref)).reason).toBe('FinalizerAdded');
      expectRefusedOutcome(await env.step()(ref));
      expectRefusalShown(
        await statusOf(env, ref),
        `create ServiceAccount ${env.namespace}/${account}`,
        policy.message,
      );
      expect(await jobsOf(env, ref)).toEqual([]);
      expect(await env.redis.runLeases.read({ object: ref })).toEqual({ kind: 'free' });
    } finally {
      await policy.lift();
    }
    expect((await env.step()(ref)).action).toBe('created');
    expectRefusalGone(await statusOf(env, ref));
  });

  it('per-run Secret create refused: the Job waits without it, and is adopted once lifted', async () => {
    const ref = await created(env, 'm-runsecret');
    const prefix = 'captf-run-captf-m-m-runsecret-apply-';
    const policy = await deny(
      'runsecret',
      [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['secrets'] }],
      `!object.metadata.name.startsWith('${prefix}')`,
      () =>
        env.core.createNamespacedSecret({
          namespace: env.namespace,
          dryRun: DRY_RUN,
          body: { metadata: { name: `${prefix}probe` } },
        }),
    );
    let job = '';
    try {
      expectRefusedOutcome(await env.step()(ref));
      expectRefusalShown(
        await statusOf(env, ref),
        `create Secret ${env.namespace}/${prefix}`,
        policy.message,
      );
      const jobs = await jobsOf(env, ref);
      expect(jobs).toHaveLength(1);
      job = jobs[0]?.metadata?.name ?? '';
      expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`)).toBeUndefined();
    } finally {
      await policy.lift();
    }
    const next = await stepUntil(env.step(), ref, 'watching');
    expect(next.job).toBe(job);
    expect(await env.kube.reader.getSecret(env.namespace, `captf-run-${job}`)).toBeDefined();
    const status = await statusOf(env, ref);
    expectRefusalGone(status);
    expect(status.waitReason).toBe('JobActive');
  });

  it("bookkept mark refused (the Job's metadata): the run is recorded, the mark follows once lifted", async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-mark');
    const allowed =
      "!(object.metadata.?labels[?'captf.io/owner-name'].orValue('') == 'm-mark' && " +
      "has(object.metadata.annotations) && 'captf.io/bookkept' in object.metadata.annotations)";
    const policy = await deny(
      'mark',
      [{ apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['jobs'] }],
      allowed,
      () =>
        env.batch.createNamespacedJob({
          namespace: env.namespace,
          dryRun: DRY_RUN,
          body: {
            metadata: {
              name: 'probe-mark',
              labels: { 'captf.io/owner-name': 'm-mark' },
              annotations: { 'captf.io/bookkept': 'probe' },
            },
            spec: {
              template: {
                spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'example.invalid/x:1' }] },
              },
            },
          },
        }),
    );
    try {
      await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
      expectRefusedOutcome(await env.step()(ref));
      const status = await statusOf(env, ref);
      expectRefusalShown(status, `patch Job ${env.namespace}/${job}`, policy.message);
      expect(status.lastRun).toMatchObject({ job, result: 'succeeded' });
      const [read] = await jobsOf(env, ref);
      expect(read?.metadata?.annotations?.['captf.io/bookkept']).toBeUndefined();
    } finally {
      await policy.lift();
    }
    const next = await env.step()(ref);
    expect(next.action).toBe('bookkept');
    const [marked] = await jobsOf(env, ref);
    expect(marked?.metadata?.annotations?.['captf.io/bookkept']).toBeDefined();
    const status = await statusOf(env, ref);
    expectRefusalGone(status);
    expect(status.ready).toBe(true);
  });

  it("the object's own status write refused: a WriteRefused Warning Event says so, the status follows once lifted", async () => {
    const ref = await created(env, 'm-status');
    const resource = CUSTOM_RESOURCES.TerraformMachine;
    const policy = await deny(
      'status',
      [
        {
          apiGroups: [resource.group],
          apiVersions: ['*'],
          operations: ['UPDATE'],
          resources: [`${resource.plural}/status`],
        },
      ],
      "object.metadata.name != 'm-status'",
      () =>
        env.custom.patchNamespacedCustomObjectStatus(
          {
            ...resource,
            namespace: env.namespace,
            name: 'm-status',
            dryRun: DRY_RUN,
            body: { status: { observedGeneration: 99 } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
    );
    try {
      expectRefusedOutcome(await env.step()(ref));
      const events = (await eventsOf(env, ref)).filter((event) => event.reason === 'WriteRefused');
      expect(events).toHaveLength(1);
      expect(events[0]?.type).toBe('Warning');
      expect(events[0]?.note).toContain(`${env.namespace}/m-status`);
      expect(events[0]?.note).toContain(policy.message);
      expect((await statusOf(env, ref)).activeJob).toBeUndefined();
    } finally {
      await policy.lift();
    }
    // The Job the refused step created is adopted; its status is written now.
    const next = await stepUntil(env.step(), ref, 'watching');
    const status = await statusOf(env, ref);
    expect(status.activeJob?.name).toBe(next.job);
    expectRefusalGone(status);
  });
  it('TerraformPlan create refused: the blocked run waits unrecorded, and is recorded with its plan once lifted', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-plan');
    const object = await readObject(env, ref);
    const probe = buildPlanManifest({
      target: {
        apiVersion: object.apiVersion,
        kind: 'TerraformMachine',
        name: 'm-plan',
        namespace: env.namespace,
        uid: object.metadata.uid,
      },
      job: 'probe',
      inputsHash: 'h',
      plan: { digest: DIGEST, add: 0, change: 0, destroy: 1 },
      labels: { 'captf.io/owner-name': 'm-plan' },
    });
    const resource = CUSTOM_RESOURCES.TerraformPlan;
    const policy = await deny(
      'plan',
      [
        {
          apiGroups: [resource.group],
          apiVersions: ['*'],
          operations: ['CREATE'],
          resources: [resource.plural],
        },
      ],
      "object.metadata.?labels[?'captf.io/owner-name'].orValue('') != 'm-plan'",
      () =>
        env.custom.createNamespacedCustomObject({
          ...resource,
          namespace: env.namespace,
          dryRun: DRY_RUN,
          body: { ...probe, metadata: { ...probe.metadata, ownerReferences: [] } },
        }),
    );
    try {
      await finishJob(env, job, {
        exitCode: 3,
        result: result('apply', 'blocked', {
          plan: { digest: DIGEST, add: 0, change: 0, destroy: 1, destructive: true },
        }),
      });
      expectRefusedOutcome(await env.step()(ref));
      const status = await statusOf(env, ref);
      expectRefusalShown(status, `create TerraformPlan ${env.namespace}/${job}-plan`, policy.message);
      // The plan comes before the status that would name it (section 7's order): nothing is recorded yet.
      expect(status.pendingPlanRef).toBeUndefined();
    } finally {
      await policy.lift();
    }
    expect(await env.step()(ref)).toMatchObject({ reason: 'AwaitingApproval' });
    const status = await statusOf(env, ref);
    expect(status.pendingPlanRef?.name).toBe(`${job}-plan`);
    expectRefusalGone(status);
  });
  it('prune delete refused (a Job above the history limit): the object shows it, the Job goes once lifted', async () => {
    const { ref, job: first } = await startedObject(env, 'TerraformMachine', 'm-prune', {
      jobs: { successfulJobsHistoryLimit: 1 },
    });
    await finishJob(env, first, { exitCode: 0, result: result('apply', 'succeeded') });
    expect((await env.step()(ref)).action).toBe('bookkept');
    await patchSpec(env, ref, { variables: { n: 2 } });
    const second = await stepUntil(env.step(), ref, 'created');
    const policy = await deny(
      'prune',
      [{ apiGroups: ['batch'], apiVersions: ['v1'], operations: ['DELETE'], resources: ['jobs'] }],
      `oldObject.metadata.name != '${first}'`,
      () => env.batch.deleteNamespacedJob({ namespace: env.namespace, name: first, dryRun: DRY_RUN }),
    );
    try {
      await finishJob(env, second.job ?? '', { exitCode: 0, result: result('apply', 'succeeded') });
      expectRefusedOutcome(await env.step()(ref));
      const status = await statusOf(env, ref);
      expectRefusalShown(status, `delete Job ${env.namespace}/${first}`, policy.message);
      expect(status.lastRun?.job).toBe(second.job);
    } finally {
      await policy.lift();
    }
    await env.step()(ref);
    expectRefusalGone(await statusOf(env, ref));
    await eventually(
      () => jobsOf(env, ref),
      (jobs) => !jobs.some((j) => j.metadata?.name === first),
      60_000,
      `${first} pruned`,
    );
  });
});
