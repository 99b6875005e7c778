import type { CoreV1Event, V1Job, V1PodTemplateSpec } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createStepEnv,
  eventually,
  finishJob,
  jobsOf,
  podOf,
  result,
  type StepEnv,
  startedObject,
  statusOf,
} from './harness.ts';

// Issue 16 item 6: a namespace that enforces the `restricted` Pod Security Standard admits the pods of the
// Jobs the step creates. The real kube-apiserver runs the PodSecurity admission plugin and the real Job
// controller creates the pods; the same namespace refuses the same pod without our security contexts, so the
// test cannot pass because the namespace admits everything.

const RESTRICTED = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
};

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('psa', { namespaceLabels: RESTRICTED });
});

afterAll(async () => {
  await env?.close();
});

/** Core events about one Job (the Job controller reports a refused pod as `FailedCreate`). */
async function jobEvents(job: string): Promise<CoreV1Event[]> {
  const list = await env.core.listNamespacedEvent({
    namespace: env.namespace,
    fieldSelector: `involvedObject.kind=Job,involvedObject.name=${job}`,
  });
  return list.items;
}

/** The template with every security context removed: what the Job builder made before issue 16. */
function withoutSecurityContexts(template: V1PodTemplateSpec): V1PodTemplateSpec {
  const spec = template.spec;
  if (!spec) throw new Error('pod template without spec');
  const bare = ({
    securityContext: _,
    ...container
  }: {
    securityContext?: unknown;
    name: string;
    image?: string;
  }) => container;
  return {
    metadata: { labels: { ...template.metadata?.labels } },
    spec: {
      ...spec,
      securityContext: { fsGroup: spec.securityContext?.fsGroup },
      initContainers: spec.initContainers?.map(bare),
      containers: spec.containers.map(bare),
    },
  };
}

describe('I16.6 Pod Security restricted', () => {
  let job = '';
  let template: V1PodTemplateSpec;

  it("the step's Job gets its pod in a restricted namespace (no FailedCreate) and runs to a bookkept success", async () => {
    const started = await startedObject(env, 'TerraformMachine', 'm-psa');
    job = started.job;
    const [created] = await jobsOf(env, started.ref);
    template = created?.spec?.template as V1PodTemplateSpec;
    const pod = await podOf(env, job);
    expect(pod.spec?.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect((await jobEvents(job)).filter((event) => event.reason === 'FailedCreate')).toEqual([]);

    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    const outcome = await env.step()(started.ref);
    expect(outcome).toMatchObject({ action: 'bookkept', reason: 'ApplySucceeded', job });
    expect((await statusOf(env, started.ref)).lastRun).toMatchObject({ job, result: 'succeeded' });
  });

  it('the same namespace refuses the same pod without the security contexts, and admits it with them', async () => {
    const podBody = (spec: V1PodTemplateSpec, name: string) => ({
      metadata: { name, labels: spec.metadata?.labels },
      spec: spec.spec,
    });
    // Admitted as the Job builds it (a dry run: nothing is created).
    await env.core.createNamespacedPod({
      namespace: env.namespace,
      body: podBody({ metadata: {}, spec: template.spec }, 'psa-admitted'),
      dryRun: 'All',
    });
    const bare = withoutSecurityContexts(template);
    const refused = await env.core
      .createNamespacedPod({ namespace: env.namespace, body: podBody(bare, 'psa-refused'), dryRun: 'All' })
      .then(
        () => 'admitted',
        // client-node's ApiException carries the Status document as a JSON string.
        (error: unknown) =>
          (JSON.parse(String((error as { body?: unknown }).body)) as { message: string }).message,
      );
    expect(refused).toContain('violates PodSecurity "restricted:latest"');
    for (const missing of ['allowPrivilegeEscalation', 'capabilities', 'runAsNonRoot', 'seccompProfile']) {
      expect(refused).toContain(missing);
    }
  });

  it('a Job with that bare pod gets no pod: the Job controller reports FailedCreate about PodSecurity', async () => {
    const bareJob: V1Job = {
      metadata: { name: 'psa-bare', labels: { 'captf.io/test': 'psa' } },
      spec: {
        backoffLimit: 0,
        template: {
          ...withoutSecurityContexts(template),
          metadata: { labels: { 'captf.io/test': 'psa' } },
        },
      },
    };
    await env.batch.createNamespacedJob({ namespace: env.namespace, body: bareJob });
    const events = await eventually(
      () => jobEvents('psa-bare'),
      (list) => list.some((event) => event.reason === 'FailedCreate'),
      30_000,
      'FailedCreate of psa-bare',
    );
    const failed = events.find((event) => event.reason === 'FailedCreate');
    expect(failed?.message).toContain('violates PodSecurity "restricted:latest"');
    const pods = await env.core.listNamespacedPod({
      namespace: env.namespace,
      labelSelector: 'job-name=psa-bare',
    });
    expect(pods.items).toEqual([]);
  });
});
