import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeAppDeps } from '../../../functions/compose.ts';
import { systemClock } from '../../../src/adapters/clock.ts';
import { createRedisAdapter } from '../../../src/adapters/redis/adapter.ts';
import { readConfig } from '../../../src/config.ts';
import { buildApp } from '../../../src/http/app.ts';
import { createLogger } from '../../../src/http/logger.ts';
import { kubeWatchSource } from '../../../src/relay/kube-source.ts';
import { RELAY_RESOURCES } from '../../../src/relay/resources.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';
import { CONTROLLER_USER, controllerAdapter, impersonatedKubeConfig } from '../../env/impersonation.ts';
import { testStack } from '../../env/index.ts';

// The shipped ClusterRoles against the real API server's authorizer: enough for what the handlers' wiring
// and the relay do (run under impersonation of the service accounts bound only to them), and no more.

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const EVENT_SOURCE = 'system:serviceaccount:captf-system:captf-event-source';
const SECRET_EVENTS = 'system:serviceaccount:captf-system:captf-secret-events';

const kubectl = (args: string[]) =>
  run(testStack().kubectlPath, ['--kubeconfig', testStack().kubeconfigPath, ...args]);

/**
 * Asks the API server's authorizer directly (SubjectAccessReview), so resources whose CRD is not installed
 * here (Cluster API's Cluster) are checked too. `resource` is `plural[.group][/subresource]`; namespace ''
 * asks about all namespaces at once (a cluster-wide list or watch).
 */
async function canI(user: string, verb: string, resource: string, namespace = 'default'): Promise<boolean> {
  const [typed = '', subresource] = resource.split('/');
  const dot = typed.indexOf('.');
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user,
      groups: user.startsWith('system:serviceaccount:')
        ? ['system:serviceaccounts', 'system:authenticated']
        : [],
      resourceAttributes: {
        namespace,
        verb,
        resource: dot === -1 ? typed : typed.slice(0, dot),
        group: dot === -1 ? '' : typed.slice(dot + 1),
        ...(subresource === undefined ? {} : { subresource }),
      },
    },
  };
  const child = kubectl(['create', '-f', '-', '-o', 'jsonpath={.status.allowed}']);
  child.child.stdin?.end(JSON.stringify(review));
  return (await child).stdout.trim() === 'true';
}

beforeAll(async () => {
  for (const file of [
    'crds/infrastructure.cluster.x-k8s.io_terraformclusters.yaml',
    'crds/infrastructure.cluster.x-k8s.io_terraformmachines.yaml',
    'crds/infrastructure.cluster.x-k8s.io_terraformmachinepools.yaml',
    'crds/infrastructure.cluster.x-k8s.io_terraformplans.yaml',
    'namespace.yaml',
    'rbac/controller.yaml',
    'rbac/event-source.yaml',
    'rbac/secret-events.yaml',
    'rbac/cluster-api.yaml',
  ]) {
    await kubectl(['apply', '-f', join(root, 'infra', file)]);
  }
  await kubectl(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s']);
}, 120_000);

describe('controller ClusterRole', () => {
  const allowed = [
    { id: 'job-create', name: 'create Jobs', verb: 'create', resource: 'jobs.batch' },
    { id: 'job-patch', name: 'patch Jobs (bookkept annotation)', verb: 'patch', resource: 'jobs.batch' },
    { id: 'job-delete', name: 'delete Jobs (prune, deadline)', verb: 'delete', resource: 'jobs.batch' },
    { id: 'pod-list', name: 'list Pods', verb: 'list', resource: 'pods' },
    { id: 'pod-patch', name: 'patch Pods (release the result finalizer)', verb: 'patch', resource: 'pods' },
    { id: 'pod-log', name: "read a Job pod's log (the readable plan)", verb: 'get', resource: 'pods/log' },
    { id: 'secret-create', name: 'create per-run Secrets', verb: 'create', resource: 'secrets' },
    { id: 'secret-get', name: 'get a Secret by name', verb: 'get', resource: 'secrets' },
    { id: 'secret-delete', name: 'delete per-run Secrets', verb: 'delete', resource: 'secrets' },
    {
      id: 'secret-patch',
      name: 'label a state Secret for clusterctl move',
      verb: 'patch',
      resource: 'secrets',
    },
    {
      id: 'runner-identity-account',
      name: 'create runner identity ServiceAccounts',
      verb: 'create',
      resource: 'serviceaccounts',
    },
    {
      id: 'runner-identity-role',
      name: 'create runner identity Roles',
      verb: 'create',
      resource: 'roles.rbac.authorization.k8s.io',
    },
    {
      id: 'runner-identity-binding',
      name: 'create runner identity RoleBindings',
      verb: 'create',
      resource: 'rolebindings.rbac.authorization.k8s.io',
    },
    {
      id: 'runner-lock-lease',
      name: 'create the free state lock Lease',
      verb: 'create',
      resource: 'leases.coordination.k8s.io',
    },
    {
      id: 'lock-lease-delete',
      name: 'delete a state lock Lease with its empty state (the admission policy holds it to lock-tfstate-*)',
      verb: 'delete',
      resource: 'leases.coordination.k8s.io',
    },
    {
      id: 'status',
      name: 'patch TerraformCluster status',
      verb: 'patch',
      resource: 'terraformclusters.infrastructure.cluster.x-k8s.io/status',
    },
    {
      id: 'finalizers',
      name: 'update TerraformMachine finalizers',
      verb: 'update',
      resource: 'terraformmachines.infrastructure.cluster.x-k8s.io/finalizers',
    },
    {
      id: 'plans',
      name: 'create TerraformPlans',
      verb: 'create',
      resource: 'terraformplans.infrastructure.cluster.x-k8s.io',
    },
    { id: 'events', name: 'create events.k8s.io Events', verb: 'create', resource: 'events.events.k8s.io' },
    { id: 'capi', name: 'get Cluster API Clusters', verb: 'get', resource: 'clusters.cluster.x-k8s.io' },
    {
      id: 'capi-machine',
      name: "get Cluster API Machines (a machine's owner)",
      verb: 'get',
      resource: 'machines.cluster.x-k8s.io',
    },
    {
      id: 'capi-pool',
      name: "get Cluster API MachinePools (a pool's owner)",
      verb: 'get',
      resource: 'machinepools.cluster.x-k8s.io',
    },
    {
      id: 'tokenreviews',
      name: "create TokenReviews (the sources' OIDC tokens)",
      verb: 'create',
      resource: 'tokenreviews.authentication.k8s.io',
    },
  ];
  const denied = [
    { id: 'pod-create', name: 'create Pods', verb: 'create', resource: 'pods' },
    { id: 'pod-exec', name: 'exec into Pods', verb: 'create', resource: 'pods/exec' },
    { id: 'job-update', name: 'update Job specs', verb: 'update', resource: 'jobs.batch' },
    { id: 'configmaps', name: 'read ConfigMaps', verb: 'list', resource: 'configmaps' },
    {
      id: 'role-delete',
      name: 'delete Roles (runner identities go with their objects)',
      verb: 'delete',
      resource: 'roles.rbac.authorization.k8s.io',
    },
    {
      id: 'clusterrole-create',
      name: 'create ClusterRoles',
      verb: 'create',
      resource: 'clusterroles.rbac.authorization.k8s.io',
    },
    {
      id: 'clusterrolebinding-create',
      name: 'create ClusterRoleBindings',
      verb: 'create',
      resource: 'clusterrolebindings.rbac.authorization.k8s.io',
    },
    {
      id: 'role-escalate',
      name: 'escalate Roles',
      verb: 'escalate',
      resource: 'roles.rbac.authorization.k8s.io',
    },
    { id: 'role-bind', name: 'bind any Role', verb: 'bind', resource: 'roles.rbac.authorization.k8s.io' },
    {
      id: 'capi-write',
      name: 'patch Cluster API Clusters',
      verb: 'patch',
      resource: 'clusters.cluster.x-k8s.io',
    },
    {
      id: 'capi-machine-list',
      name: 'list Cluster API Machines (reads are by name)',
      verb: 'list',
      resource: 'machines.cluster.x-k8s.io',
    },
    {
      id: 'no-watch',
      name: 'watch Secrets (it reads live; only the relay watches)',
      verb: 'watch',
      resource: 'secrets',
    },
    { id: 'no-secret-list', name: 'list Secrets in a namespace', verb: 'list', resource: 'secrets' },
    {
      id: 'no-update',
      name: 'update TerraformMachines (writes are patches)',
      verb: 'update',
      resource: 'terraformmachines.infrastructure.cluster.x-k8s.io',
    },
    {
      id: 'plan-delete',
      name: 'delete TerraformPlans',
      verb: 'delete',
      resource: 'terraformplans.infrastructure.cluster.x-k8s.io',
    },
    {
      id: 'no-templates',
      name: 'read TerraformMachineTemplates (Cluster API clones them; the controller never reads one)',
      verb: 'get',
      resource: 'terraformmachinetemplates.infrastructure.cluster.x-k8s.io',
    },
    {
      id: 'crd-delete',
      name: 'delete CRDs',
      verb: 'delete',
      resource: 'customresourcedefinitions.apiextensions.k8s.io',
    },
  ];
  it.each(allowed)('$id may $name', async ({ verb, resource }) => {
    expect(await canI(CONTROLLER_USER, verb, resource)).toBe(true);
  });
  it.each(denied)('$id may not $name', async ({ verb, resource }) => {
    expect(await canI(CONTROLLER_USER, verb, resource)).toBe(false);
  });
  it('no-secret-list-cluster: may not list Secrets cluster-wide (issue 16)', async () => {
    expect(await canI(CONTROLLER_USER, 'list', 'secrets', '')).toBe(false);
    expect(await canI(CONTROLLER_USER, 'list', 'pods', '')).toBe(true);
  });

  it('the handlers wiring (sweep lists, owner reads, readiness) works bound only to it', async () => {
    const namespace = `rbac-${randomBytes(3).toString('hex')}`;
    await kubectl(['create', 'namespace', namespace]);
    // A Job of ours for the sweep's Job list to find.
    await kubectl(['-n', namespace, 'create', 'job', 'left-job', '--image=example.invalid/x:1']);
    await kubectl(['-n', namespace, 'label', 'job', 'left-job', 'captf.io/managed=true']);
    await kubectl(['-n', namespace, 'annotate', 'job', 'left-job', 'captf.io/bookkept=true']);
    const stack = testStack();
    const read = readConfig({
      REDIS_URL: stack.redisUrl,
      KUBECONFIG: stack.kubeconfigPath,
      CAPTF_AUTH_DISABLED: 'true',
      CAPTF_RUNNER_IMAGE: 'captf-runner:test',
    });
    if (!read.ok) throw new Error(read.message);
    const redis = createRedisAdapter({
      url: stack.redisUrl,
      keyPrefix: `rbac-${randomBytes(3).toString('hex')}`,
    });
    await redis.waitUntilReady(5000);
    const kube = controllerAdapter('rbac');
    const step: ReconcileStep = async (ref) => ({
      ref,
      action: 'none',
      reason: 'UpToDate',
      requeueAfterSeconds: 600,
    });
    const app = buildApp(
      composeAppDeps({
        config: read.config,
        logger: createLogger('silent'),
        redis,
        kube,
        step,
        clock: systemClock,
      }),
    );
    try {
      const tick = await app.inject({ method: 'POST', url: '/tick' });
      expect(tick.json().sweep).toMatchObject({ state: 'ran', stepFailures: 0 });
      expect(tick.json().sweep.jobs).toBeGreaterThanOrEqual(1);
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.json()).toMatchObject({ ready: true });
      const owner = await app.inject({
        method: 'POST',
        url: '/events',
        headers: {
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': '1',
          'ce-source': stack.apiServerUrl,
          'ce-type': 'dev.knative.apiserver.ref.update',
        },
        payload: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', name: 'absent', namespace }),
      });
      expect(owner.json()).toEqual({ handled: false, reason: 'ObjectGone' });
    } finally {
      await app.close();
      await redis.close();
    }
  });
});

describe('event-source ClusterRole (ApiServerSource and the relay)', () => {
  it('lists every resource the relay and the ApiServerSource watch', async () => {
    const source = kubeWatchSource(impersonatedKubeConfig(EVENT_SOURCE));
    for (const resource of RELAY_RESOURCES) {
      // A CRD applied moments ago may answer 429 "storage is (re)initializing" for a second.
      let listed: { resourceVersion: string } | undefined;
      for (let attempt = 0; listed === undefined && attempt < 20; attempt++) {
        listed = await source.list(resource).catch(async (error: unknown) => {
          if ((error as { code?: unknown }).code !== 429) throw error;
          await new Promise((resolve) => setTimeout(resolve, 250));
          return undefined;
        });
      }
      expect(listed?.resourceVersion, resource.kind).toEqual(expect.any(String));
    }
  });

  it.each([
    { id: 'no-writes', name: 'create Jobs', verb: 'create', resource: 'jobs.batch' },
    {
      id: 'no-status',
      name: 'patch TerraformCluster status',
      verb: 'patch',
      resource: 'terraformclusters.infrastructure.cluster.x-k8s.io/status',
    },
    { id: 'no-delete', name: 'delete Secrets', verb: 'delete', resource: 'secrets' },
    { id: 'no-secret-get', name: 'get Secrets', verb: 'get', resource: 'secrets' },
  ])('$id: may not $name', async ({ verb, resource }) => {
    expect(await canI(EVENT_SOURCE, verb, resource)).toBe(false);
  });

  it('no-secret-watch: may neither list nor watch Secrets, in a namespace or cluster-wide (issue 16)', async () => {
    for (const namespace of ['default', '']) {
      for (const verb of ['list', 'watch']) {
        expect(await canI(EVENT_SOURCE, verb, 'secrets', namespace), `${verb} in '${namespace}'`).toBe(false);
      }
    }
    expect(await canI(EVENT_SOURCE, 'watch', 'pods', '')).toBe(true);
  });
});

describe('Secret events ClusterRole', () => {
  it('lists and watches Secrets, in a namespace and cluster-wide, and nothing else: no get, no write, no other kind', async () => {
    for (const namespace of ['default', '']) {
      for (const verb of ['list', 'watch'])
        expect(await canI(SECRET_EVENTS, verb, 'secrets', namespace), `${verb} in '${namespace}'`).toBe(true);
    }
    for (const verb of ['get', 'create', 'update', 'patch', 'delete'])
      expect(await canI(SECRET_EVENTS, verb, 'secrets'), verb).toBe(false);
    expect(await canI(SECRET_EVENTS, 'watch', 'pods', '')).toBe(false);
    expect(await canI(SECRET_EVENTS, 'list', 'configmaps')).toBe(false);
  });
});

describe('Cluster API ClusterRole (aggregated into its manager role)', () => {
  // The role aggregated into Cluster API's aggregated-manager-role, bound here to a user of its own: no
  // clusterrole-aggregation controller runs in the test stack.
  const manager = `capi-manager-${randomBytes(3).toString('hex')}`;
  beforeAll(async () => {
    await kubectl([
      'create',
      'clusterrolebinding',
      manager,
      '--clusterrole=captf-cluster-api',
      `--user=${manager}`,
    ]);
  });
  afterAll(async () => {
    await kubectl(['delete', 'clusterrolebinding', manager, '--ignore-not-found']);
  });

  const group = 'infrastructure.cluster.x-k8s.io';
  it.each([
    {
      id: 'capi-clone',
      name: 'create TerraformMachines from a template',
      verb: 'create',
      resource: 'terraformmachines',
    },
    {
      id: 'capi-owner',
      name: 'patch a TerraformCluster (owner reference)',
      verb: 'patch',
      resource: 'terraformclusters',
    },
    {
      id: 'capi-scale',
      name: 'delete TerraformMachines (scale down)',
      verb: 'delete',
      resource: 'terraformmachines',
    },
    {
      id: 'capi-pool',
      name: 'watch TerraformMachinePools',
      verb: 'watch',
      resource: 'terraformmachinepools',
    },
    {
      id: 'capi-template',
      name: 'get TerraformMachineTemplates',
      verb: 'get',
      resource: 'terraformmachinetemplates',
    },
    {
      id: 'capi-rotate',
      name: 'create TerraformMachinePoolTemplates (ClusterClass)',
      verb: 'create',
      resource: 'terraformmachinepooltemplates',
    },
    {
      id: 'capi-cluster-template',
      name: 'patch TerraformClusterTemplates (owner reference)',
      verb: 'patch',
      resource: 'terraformclustertemplates',
    },
  ])('$id may $name', async ({ verb, resource }) => {
    expect(await canI(manager, verb, `${resource}.${group}`)).toBe(true);
  });

  it.each([
    { id: 'capi-no-cluster-template-create', verb: 'create', resource: `terraformclustertemplates.${group}` },
    { id: 'capi-no-plans', verb: 'get', resource: `terraformplans.${group}` },
    { id: 'capi-no-status', verb: 'patch', resource: `terraformmachines.${group}/status` },
    { id: 'capi-no-secrets', verb: 'get', resource: 'secrets' },
  ])('$id may not $verb $resource', async ({ verb, resource }) => {
    expect(await canI(manager, verb, resource)).toBe(false);
  });

  it('carries the aggregation label Cluster API selects on', async () => {
    const labels = await kubectl([
      'get',
      'clusterrole',
      'captf-cluster-api',
      '-o',
      'jsonpath={.metadata.labels}',
    ]);
    expect(JSON.parse(labels.stdout)).toMatchObject({ 'cluster.x-k8s.io/aggregate-to-manager': 'true' });
  });
});
