import { gzipSync } from 'node:zlib';
import {
  CoordinationV1Api,
  KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { testStack } from '../../env/index.ts';
import {
  createObject,
  createStepEnv,
  eventsOf,
  eventually,
  finishJob,
  readObject,
  result,
  type StepEnv,
  startedObject,
  stepUntil,
} from './harness.ts';

// Issue 23 item 3: what an object leaves behind once its finalizer goes, on the real API server and
// garbage collector. The state Secret and its lock Lease are not owned (they survive moves and restores), so
// the finalize step deletes them when the state holds nothing and keeps them, with a StateKept Warning,
// when it holds resources; the runner identity and the plan key are owned and go with the garbage collector.
// The test plays the kubelet and writes the state as the kubernetes backend does (gzip'd JSON, `tfstate`).

let env: StepEnv;
let coordination: CoordinationV1Api;
let rbac: RbacAuthorizationV1Api;

beforeAll(async () => {
  env = await createStepEnv('statecl');
  const config = new KubeConfig();
  config.loadFromFile(testStack().kubeconfigPath);
  coordination = config.makeApiClient(CoordinationV1Api);
  rbac = config.makeApiClient(RbacAuthorizationV1Api);
});

afterAll(async () => {
  await env?.close();
});

const NULL_RESOURCE = {
  mode: 'managed',
  type: 'terraform_data',
  name: 'node',
  provider: 'provider["terraform.io/builtin/terraform"]',
  instances: [{ schema_version: 0, attributes: { id: 'x' } }],
};

/** Writes `resources` into the object's state Secret as the backend would. */
async function writeState(suffix: string, resources: unknown[]): Promise<void> {
  const state = { version: 4, terraform_version: '1.12.6', serial: 2, lineage: 'l', outputs: {}, resources };
  const tfstate = gzipSync(Buffer.from(JSON.stringify(state))).toString('base64');
  await env.core.patchNamespacedSecret(
    { namespace: env.namespace, name: `tfstate-default-${suffix}`, body: { data: { tfstate } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Which of the object's per-object things still exist, by name. */
async function leftBehind(suffix: string): Promise<string[]> {
  const reads: [string, () => Promise<unknown>][] = [
    [
      'state Secret',
      () => env.core.readNamespacedSecret({ namespace: env.namespace, name: `tfstate-default-${suffix}` }),
    ],
    [
      'lock Lease',
      () =>
        coordination.readNamespacedLease({
          namespace: env.namespace,
          name: `lock-tfstate-default-${suffix}`,
        }),
    ],
    [
      'plan key',
      () => env.core.readNamespacedSecret({ namespace: env.namespace, name: `captf-plan-key-${suffix}` }),
    ],
    [
      'ServiceAccount',
      () =>
        env.core.readNamespacedServiceAccount({ namespace: env.namespace, name: `captf-runner-${suffix}` }),
    ],
    ['Role', () => rbac.readNamespacedRole({ namespace: env.namespace, name: `captf-runner-${suffix}` })],
    [
      'RoleBinding',
      () => rbac.readNamespacedRoleBinding({ namespace: env.namespace, name: `captf-runner-${suffix}` }),
    ],
  ];
  const found = await Promise.all(
    reads.map(([, read]) =>
      read().then(
        () => true,
        () => false,
      ),
    ),
  );
  return reads.filter((_, index) => found[index]).map(([what]) => what);
}

async function deleteObject(ref: ObjectRef): Promise<void> {
  await env.custom.deleteNamespacedCustomObject({
    ...CUSTOM_RESOURCES[ref.kind],
    namespace: env.namespace,
    name: ref.name,
  });
}

/** Applies, then deletes and destroys, leaving `after` in the state; steps until the object is gone. */
async function applyThenDestroy(name: string, after: unknown[]): Promise<ObjectRef> {
  const suffix = `m-${name}`;
  const { ref, job } = await startedObject(env, 'TerraformMachine', name);
  // The identity exists before the first Job: the state Secret (empty), its Lease, the plan key.
  expect(await leftBehind(suffix)).toEqual([
    'state Secret',
    'lock Lease',
    'plan key',
    'ServiceAccount',
    'Role',
    'RoleBinding',
  ]);
  await writeState(suffix, [NULL_RESOURCE]);
  await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
  await env.step()(ref);
  // The runner identity found complete is remembered per uid (issue 22), and forgotten as the object goes.
  const uid = (await readObject(env, ref)).metadata.uid ?? '';
  expect(await env.redis.client.exists(env.redis.keys.identityCheck(uid))).toBe(1);
  await deleteObject(ref);
  const destroy = (await stepUntil(env.step(), ref, 'created')).job ?? '';
  await finishJob(env, destroy, { exitCode: 0, result: result('destroy', 'succeeded') });
  // After the harness played the backend's successful destroy (no resources): what this case leaves.
  await writeState(suffix, after);
  await stepUntil(env.step(), ref, 'finalized');
  expect(await env.redis.client.exists(env.redis.keys.identityCheck(uid))).toBe(0);
  return ref;
}

describe('per-object things do not outlive the object', () => {
  it('a machine applied then destroyed leaves no state Secret, lock Lease, plan key or runner identity', async () => {
    await applyThenDestroy('gone', []);
    // The state Secret and Lease went in the finalize step itself, before our finalizer.
    const now = await leftBehind('m-gone');
    expect(now).not.toContain('state Secret');
    expect(now).not.toContain('lock Lease');
    // The owned rest goes with the garbage collector, which watches our kinds only after its discovery
    // resync (every 30 s): a file that runs first on a fresh control plane may wait for it.
    const left = await eventually(
      () => leftBehind('m-gone'),
      (names) => names.length === 0,
      120_000,
      'nothing of m-gone left',
    );
    expect(left).toEqual([]);
  });

  it('a destroy that leaves resources in the state keeps the state Secret and its Lease, and says so', async () => {
    const ref = await applyThenDestroy('kept', [NULL_RESOURCE]);
    const left = await eventually(
      () => leftBehind('m-kept'),
      (names) => names.length === 2,
      30_000,
      'only the state of m-kept left',
    );
    expect(left).toEqual(['state Secret', 'lock Lease']);
    const warning = (await eventsOf(env, ref)).find((event) => event.reason === 'StateKept');
    expect(warning?.type).toBe('Warning');
    expect(warning?.note).toContain('tfstate-default-m-kept holds managed resource instances');
  });

  it('an object re-created over an existing state (a restore without status) and deleted destroys what that state holds', async () => {
    // The first object applied and was deleted with resources left; the second, same name, never ran: its
    // status was lost, not its infrastructure (issue 23 item 5), so it destroys rather than dropping the state.
    const ref = await createObject(env, 'TerraformMachine', 'kept');
    await env.step()(ref); // adds our finalizer, and stops there
    await deleteObject(ref);
    const destroy = await stepUntil(env.step(), ref, 'created');
    expect(destroy.job).toMatch(/^captf-m-kept-destroy-a1-/);
    expect(await leftBehind('m-kept')).toEqual(expect.arrayContaining(['state Secret', 'lock Lease']));
  });
});
