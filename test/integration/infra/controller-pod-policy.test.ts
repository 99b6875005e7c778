import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { CONTROLLER_USER, controllerAdapter } from '../../env/impersonation.ts';
import { testStack } from '../../env/index.ts';

// Issue 16 item 4: infra/admission/controller-pod-policy.yaml on the real API server. The controller's
// ServiceAccount (impersonated with the admin credentials, bound only to the shipped ClusterRole) may take
// our result finalizer off a pod and change nothing else.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const namespace = `podpolicy-${randomBytes(3).toString('hex')}`;
const OTHER_FINALIZER = 'example.com/keep';
/** The labels of one of our Job pods (src/core/job-labels.ts). */
const OURS = { 'captf.io/managed': 'true', 'captf.io/owner-uid': 'uid-of-its-object' };

async function kubectl(args: string[], input?: string): Promise<string> {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/** Runs kubectl as the controller and returns its error text, or '' when it succeeded. */
async function asControllerError(args: string[]): Promise<string> {
  try {
    await kubectl(['--as', CONTROLLER_USER, '-n', namespace, ...args]);
    return '';
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
}

async function createPod(
  name: string,
  shape: { labels?: Record<string, string>; finalizers?: string[]; ownerReferences?: unknown[] } = {},
): Promise<void> {
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        labels: shape.labels ?? { 'captf.io/managed': 'true' },
        finalizers: shape.finalizers ?? [POD_RESULT_FINALIZER, OTHER_FINALIZER],
        ...(shape.ownerReferences ? { ownerReferences: shape.ownerReferences } : {}),
      },
      spec: {
        automountServiceAccountToken: false,
        containers: [{ name: 'x', image: 'example.invalid/x:1' }],
      },
    }),
  );
}

const finalizersOf = async (name: string) =>
  JSON.parse(
    (await kubectl(['-n', namespace, 'get', 'pod', name, '-o', 'jsonpath={.metadata.finalizers}'])) || '[]',
  ) as string[];

const mergePatch = (name: string, patch: unknown) => [
  'patch',
  'pod',
  name,
  '--type=merge',
  '-p',
  JSON.stringify(patch),
];

beforeAll(async () => {
  for (const file of ['namespace.yaml', 'rbac/controller.yaml', 'admission/controller-pod-policy.yaml']) {
    await kubectl(['apply', '-f', join(root, 'infra', file)]);
  }
  await kubectl(['create', 'namespace', namespace]);
  await createPod('probe');
  // The policy takes effect once the API server has compiled it: probe with a change it must refuse.
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; Date.now() < deadline; attempt += 1) {
    const error = await asControllerError(
      mergePatch('probe', { metadata: { labels: { probe: `${attempt}` } } }),
    );
    if (error.includes('captf-controller-pod-updates')) return;
    await sleep(500);
  }
  throw new Error('controller pod policy: not enforced within 60 s');
}, 120_000);

/** Waits until the delete policy refuses a server-side dry run of a delete it must refuse (nothing is deleted). */
async function deletePolicyEnforced(): Promise<void> {
  await createPod('delete-probe', { labels: {}, finalizers: [] });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const error = await asControllerError(['delete', 'pod', 'delete-probe', '--dry-run=server']);
    if (error.includes('captf-controller-pod-deletes')) return;
    await sleep(500);
  }
  throw new Error('controller pod delete policy: not enforced within 60 s');
}

const podExists = async (name: string) =>
  (await kubectl(['-n', namespace, 'get', 'pod', name, '--ignore-not-found', '-o', 'name'])).trim() !== '';

describe('controller pod updates (ValidatingAdmissionPolicy)', () => {
  it('allows the controller adapter to remove our result finalizer; the other finalizer stays', async () => {
    await createPod('release');
    const kube = controllerAdapter('pod-policy');
    expect(await kube.writer.removePodFinalizer(namespace, 'release', POD_RESULT_FINALIZER)).toBe('removed');
    expect(await finalizersOf('release')).toEqual([OTHER_FINALIZER]);
  });

  it.each([
    { id: 'label', name: 'change a label', patch: { metadata: { labels: { 'captf.io/managed': 'false' } } } },
    { id: 'annotation', name: 'add an annotation', patch: { metadata: { annotations: { a: 'b' } } } },
    {
      id: 'other-finalizer',
      name: 'remove another finalizer',
      patch: { metadata: { finalizers: [POD_RESULT_FINALIZER] } },
    },
    {
      id: 'add-finalizer',
      name: 'add a finalizer',
      patch: { metadata: { finalizers: [POD_RESULT_FINALIZER, OTHER_FINALIZER, 'example.com/new'] } },
    },
    {
      id: 'spec',
      name: 'change the spec',
      patch: { spec: { activeDeadlineSeconds: 5 } },
    },
  ])('$id: refuses the controller to $name', async ({ patch }) => {
    const pod = `refused-${randomBytes(3).toString('hex')}`;
    await createPod(pod);
    const error = await asControllerError(mergePatch(pod, patch));
    expect(error).toContain('captf-controller-pod-updates');
    expect(await finalizersOf(pod)).toEqual([POD_RESULT_FINALIZER, OTHER_FINALIZER]);
  });

  it('holds only the controller: another user may still change a label', async () => {
    await createPod('admin-edit');
    await kubectl([
      '-n',
      namespace,
      ...mergePatch('admin-edit', { metadata: { labels: { edited: 'yes' } } }),
    ]);
    expect(
      await kubectl([
        '-n',
        namespace,
        'get',
        'pod',
        'admin-edit',
        '-o',
        'jsonpath={.metadata.labels.edited}',
      ]),
    ).toBe('yes');
  });
});

describe('controller pod deletes (ValidatingAdmissionPolicy)', () => {
  beforeAll(deletePolicyEnforced, 90_000);

  /** The uid and version a delete is judged at. */
  const preconditionsOf = async (name: string) => {
    const meta = JSON.parse(
      await kubectl(['-n', namespace, 'get', 'pod', name, '-o', 'jsonpath={.metadata}']),
    ) as { uid: string; resourceVersion: string };
    return { uid: meta.uid, resourceVersion: meta.resourceVersion };
  };

  it('allows the controller adapter to delete one of our pods that no controller owns and that does not run', async () => {
    await createPod('orphan', { labels: OURS, finalizers: [] });
    const kube = controllerAdapter('pod-delete');
    expect(await kube.writer.deletePod(namespace, 'orphan', await preconditionsOf('orphan'))).toBe('deleted');
    expect(await podExists('orphan')).toBe(false);
    // Gone already: done, not an error.
    expect(await kube.writer.deletePod(namespace, 'orphan', { uid: 'any', resourceVersion: '1' })).toBe(
      'absent',
    );
  });

  it('a pod changed since it was read is not deleted (Conflict): it is judged again', async () => {
    await createPod('changed', { labels: OURS, finalizers: [] });
    const read = await preconditionsOf('changed');
    await kubectl(['-n', namespace, 'annotate', 'pod', 'changed', 'touched=yes']);
    const kube = controllerAdapter('pod-delete-changed');
    await expect(kube.writer.deletePod(namespace, 'changed', read)).rejects.toThrow(/Conflict|409/);
    expect(await podExists('changed')).toBe(true);
  });

  it('refuses the controller a pod its Job controls, a pod that is not ours, and one of ours that runs', async () => {
    // A real Job (suspended: no pod of its own) as the controller, so the garbage collector keeps the pod.
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'owner', namespace },
        spec: {
          suspend: true,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'example.invalid/x:1' }] },
          },
        },
      }),
    );
    const jobUid = await kubectl(['-n', namespace, 'get', 'job', 'owner', '-o', 'jsonpath={.metadata.uid}']);
    await createPod('owned', {
      labels: OURS,
      finalizers: [],
      ownerReferences: [
        { apiVersion: 'batch/v1', kind: 'Job', name: 'owner', uid: jobUid, controller: true },
      ],
    });
    await createPod('not-ours', { labels: { app: 'web' }, finalizers: [] });
    await createPod('running', { labels: OURS, finalizers: [] });
    await kubectl([
      '-n',
      namespace,
      'patch',
      'pod',
      'running',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { phase: 'Running' } }),
    ]);
    const kube = controllerAdapter('pod-delete-refused');
    for (const name of ['owned', 'not-ours', 'running']) {
      await expect(kube.writer.deletePod(namespace, name, await preconditionsOf(name))).rejects.toThrow(
        /captf-controller-pod-deletes/,
      );
      expect(await podExists(name)).toBe(true);
    }
  });
});
