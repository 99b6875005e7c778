import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/adapters/clock.ts';
import { createKubeAdapter } from '../../../src/adapters/kube/adapter.ts';
import { POD_RESULT_FINALIZER } from '../../../src/core/job-labels.ts';
import { testStack } from '../../env/index.ts';

// Issue 16 item 4: infra/admission/controller-pod-policy.yaml on the real API server. The controller's
// ServiceAccount (impersonated with the admin credentials, bound only to the shipped ClusterRole) may take
// our result finalizer off a pod and change nothing else.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const namespace = `podpolicy-${randomBytes(3).toString('hex')}`;
const CONTROLLER = 'system:serviceaccount:captf-system:captf-controller';
const OTHER_FINALIZER = 'example.com/keep';

async function kubectl(args: string[], input?: string): Promise<string> {
  const child = run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);
  if (input !== undefined) child.child.stdin?.end(input);
  return (await child).stdout;
}

/** Runs kubectl as the controller and returns its error text, or '' when it succeeded. */
async function asControllerError(args: string[]): Promise<string> {
  try {
    await kubectl(['--as', CONTROLLER, '-n', namespace, ...args]);
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

/** The controller's adapter, its requests made as the controller's ServiceAccount. */
function controllerAdapter(instance: string) {
  const admin = new KubeConfig();
  admin.loadFromFile(testStack().kubeconfigPath);
  const cluster = admin.getCurrentCluster();
  const user = admin.getCurrentUser();
  if (cluster === null || user === null) throw new Error('kubeconfig: no current cluster or user');
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(cluster, { ...user, impersonateUser: CONTROLLER });
  return createKubeAdapter({
    source: { kind: 'loaded', config: kc },
    clock: systemClock,
    reporter: { controller: 'captf.io/test', instance },
  });
}

const uidOf = async (name: string) =>
  kubectl(['-n', namespace, 'get', 'pod', name, '-o', 'jsonpath={.metadata.uid}']);

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

  it('allows the controller adapter to delete one of our pods that no Job owns (an orphaning delete left it)', async () => {
    await createPod('orphan', { finalizers: [] });
    const kube = controllerAdapter('pod-delete');
    expect(await kube.writer.deletePod(namespace, 'orphan', { uid: await uidOf('orphan') })).toBe('deleted');
    expect(await podExists('orphan')).toBe(false);
    // Gone already: done, not an error.
    expect(await kube.writer.deletePod(namespace, 'orphan', { uid: 'any' })).toBe('absent');
  });

  it('refuses the controller a pod its Job still owns, and a pod that is not ours', async () => {
    // A real Job (suspended: no pod of its own) as the owner, so the garbage collector keeps the pod.
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
      finalizers: [],
      ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'owner', uid: jobUid }],
    });
    await createPod('not-ours', { labels: { app: 'web' }, finalizers: [] });
    const kube = controllerAdapter('pod-delete-refused');
    for (const name of ['owned', 'not-ours']) {
      await expect(kube.writer.deletePod(namespace, name, { uid: await uidOf(name) })).rejects.toThrow(
        /captf-controller-pod-deletes/,
      );
      expect(await podExists(name)).toBe(true);
    }
  });
});
