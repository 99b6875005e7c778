import { describe, expect, it } from 'vitest';
import { buildJobManifest } from '../../../src/core/job-manifest.ts';
import {
  buildRunnerIdentity,
  forgetsIdentityCheck,
  identityVerified,
  isRunnerIdentityInPlace,
  leaseOwnedByState,
  RUNNER_IDENTITY_ANNOTATION,
  type RunnerIdentityInput,
  runnerAccountOf,
  runnerIdentityDigest,
} from '../../../src/core/runner-identity.ts';
import { SERVICE_ACCOUNT_DIR } from '../../../src/schemas/job-contract.ts';
import { JobsPolicySchema, resolveJobsPolicy } from '../../../src/schemas/kinds/jobs-policy.ts';

/** The run log's rule (src/core/run-log.ts): by no name, which admission narrows to the runner's own. */
const RUN_LOG_RULE = {
  apiGroups: [''],
  resources: ['secrets'],
  resourceNames: [],
  verbs: ['create', 'delete'],
};

// Issue 16 item 3: each object's runner reaches only its own state (src/core/runner-identity.ts).

const input: RunnerIdentityInput = {
  owner: {
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
    kind: 'TerraformMachine',
    name: 'm-a',
    namespace: 'team-a',
    uid: 'uid-a',
  },
  source: { backend: undefined, namespace: 'team-a', stateSuffix: 'm-m-a' },
};

describe('buildRunnerIdentity', () => {
  const identity = buildRunnerIdentity(input);

  it('names the account, Role and RoleBinding captf-runner-<state suffix>, owned by the object', () => {
    for (const part of [identity.serviceAccount, identity.role, identity.roleBinding]) {
      expect(part.metadata).toMatchObject({ name: 'captf-runner-m-m-a', namespace: 'team-a' });
      expect(part.metadata.ownerReferences).toEqual([
        expect.objectContaining({
          kind: 'TerraformMachine',
          name: 'm-a',
          uid: 'uid-a',
          blockOwnerDeletion: false,
        }),
      ]);
    }
    expect(identity.roleBinding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'captf-runner-m-m-a',
    });
    expect(identity.roleBinding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'captf-runner-m-m-a', namespace: 'team-a' },
    ]);
  });

  it('grants get and update of exactly its state Secret and lock Lease, by name, and create and delete of Secrets by no name (its run log, held by admission): no list', () => {
    expect(identity.role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['tfstate-default-m-m-a'],
        verbs: ['get', 'update'],
      },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['lock-tfstate-default-m-m-a'],
        verbs: ['get', 'update'],
      },
      RUN_LOG_RULE,
    ]);
  });

  it("pre-creates the state Secret empty and the Lease free, with OpenTofu's labels and no owner", () => {
    expect(identity.stateSecret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 'tfstate-default-m-m-a',
        namespace: 'team-a',
        labels: {
          tfstate: 'true',
          tfstateSecretSuffix: 'm-m-a',
          tfstateWorkspace: 'default',
          'app.kubernetes.io/managed-by': 'terraform',
        },
        annotations: { encoding: 'gzip' },
      },
    });
    expect(identity.lockLease?.metadata.name).toBe('lock-tfstate-default-m-m-a');
    expect(identity.lockLease?.spec).toEqual({});
    expect(identity.lockLease?.metadata.ownerReferences).toBeUndefined();
  });

  it('the Lease is owned by its state Secret once the Secret is known, so it goes with it (a move deletes the source Secret)', () => {
    const lease = identity.lockLease;
    if (!lease) throw new Error('no Lease');
    const owned = leaseOwnedByState(lease, { name: 'tfstate-default-m-m-a', uid: 'secret-uid' });
    expect(owned.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Secret',
        name: 'tfstate-default-m-m-a',
        uid: 'secret-uid',
        controller: false,
        blockOwnerDeletion: false,
      },
    ]);
    expect({ ...owned, metadata: { ...owned.metadata, ownerReferences: undefined } }).toEqual({
      ...lease,
      metadata: { ...lease.metadata, ownerReferences: undefined },
    });
    expect(leaseOwnedByState(lease, { name: 'tfstate-default-m-m-a', uid: undefined })).toBe(lease);
  });

  it('labels the state for clusterctl move when Cluster API owns the object', () => {
    const moved = buildRunnerIdentity({ ...input, source: { ...input.source, movesWithCluster: true } });
    expect(moved.stateSecret?.metadata.labels).toHaveProperty(['clusterctl.cluster.x-k8s.io/move'], '');
    expect(moved.lockLease?.metadata.labels).toHaveProperty(['clusterctl.cluster.x-k8s.io/move'], '');
  });

  it("names only the object's own state, whatever spec.backend.config points at (another object's state)", () => {
    const pointed = buildRunnerIdentity({
      ...input,
      source: {
        ...input.source,
        backend: { type: 'kubernetes', config: { namespace: 'team-b', secret_suffix: 'm-m-b' } },
      },
    });
    expect(pointed).toEqual(identity);
  });

  it('another backend gets an account with a Role for its run log alone and no state objects', () => {
    const s3 = buildRunnerIdentity({
      ...input,
      source: { ...input.source, backend: { type: 's3', config: { bucket: 'b' } } },
    });
    expect(s3.role.rules).toEqual([RUN_LOG_RULE]);
    expect(s3.stateSecret).toBeUndefined();
    expect(s3.lockLease).toBeUndefined();
  });

  it('the RoleBinding carries a digest that changes with anything it completes', () => {
    const digest = identity.roleBinding.metadata.annotations[RUNNER_IDENTITY_ANNOTATION];
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(buildRunnerIdentity(input).roleBinding.metadata.annotations[RUNNER_IDENTITY_ANNOTATION]).toBe(
      digest,
    );
    const recreated = buildRunnerIdentity({ ...input, owner: { ...input.owner, uid: 'uid-a2' } });
    expect(recreated.roleBinding.metadata.annotations[RUNNER_IDENTITY_ANNOTATION]).not.toBe(digest);
    expect(isRunnerIdentityInPlace(identity, identity.roleBinding)).toBe(true);
    expect(isRunnerIdentityInPlace(recreated, identity.roleBinding)).toBe(false);
    expect(isRunnerIdentityInPlace(identity, undefined)).toBe(false);
    expect(isRunnerIdentityInPlace(identity, { metadata: {} })).toBe(false);
  });
});

describe('runnerAccountOf and the Job', () => {
  it("a spec that names no account runs as the object's identity; one that names an account, as that", () => {
    expect(runnerAccountOf(undefined, input)).toMatchObject({ serviceAccountName: 'captf-runner-m-m-a' });
    expect(runnerAccountOf(undefined, input).identity).toBeDefined();
    expect(runnerAccountOf('team-a-cloud', input)).toEqual({ serviceAccountName: 'team-a-cloud' });
  });

  it('the Job pod runs as that account and names the service account directory on its command line', () => {
    const manifest = buildJobManifest({
      owner: { ...input.owner, generation: 1 },
      name: 'captf-m-m-a-apply-a1-abcdef',
      op: 'apply',
      attempt: 1,
      inputsHash: 'h',
      image: 'registry.example.com/m:1',
      runnerImage: 'registry.example.com/captf-runner:0.1.0',
      policy: resolveJobsPolicy({}),
      serviceAccountName: 'captf-runner-m-m-a',
    });
    const pod = manifest.spec.template.spec;
    expect(pod.serviceAccountName).toBe('captf-runner-m-m-a');
    expect(pod.containers[0]?.args).toContain(`--service-account-dir=${SERVICE_ACCOUNT_DIR}`);
  });

  it('a spec may not name a runner identity: it could reach another object’s state', () => {
    const parsed = JobsPolicySchema.safeParse({ serviceAccountName: 'captf-runner-m-m-b' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({
      path: ['serviceAccountName'],
      message: expect.stringContaining('may not start with captf-runner-'),
    });
    expect(JobsPolicySchema.safeParse({ serviceAccountName: 'team-a-cloud' }).success).toBe(true);
  });
});

describe('the remembered identity check (issue 22: a Job-creating step reads the identity once)', () => {
  const identity = buildRunnerIdentity(input);
  const digest = runnerIdentityDigest(identity);

  it('the digest is the one the RoleBinding carries', () => {
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(identity.roleBinding.metadata.annotations[RUNNER_IDENTITY_ANNOTATION]).toBe(digest);
  });

  it('a check of this very identity skips the reads; none remembered (or Redis silent) reads', () => {
    expect(identityVerified(digest, identity)).toBe(true);
    expect(identityVerified(undefined, identity)).toBe(false);
    expect(identityVerified('', identity)).toBe(false);
  });

  it('a check of another identity does not: a spec that changes the Role (an outputs Secret) reads again', () => {
    const changed = buildRunnerIdentity({
      ...input,
      source: { ...input.source, outputsSecretName: 'm-a-outputs' },
    });
    expect(runnerIdentityDigest(changed)).not.toBe(digest);
    expect(identityVerified(digest, changed)).toBe(false);
    // Another object of the same name (a new uid) owns another identity.
    const reborn = buildRunnerIdentity({ ...input, owner: { ...input.owner, uid: 'uid-b' } });
    expect(identityVerified(digest, reborn)).toBe(false);
  });

  it('bookkeeping forgets it when any run it records did not succeed, never for successes alone', () => {
    expect(forgetsIdentityCheck([])).toBe(false);
    expect(forgetsIdentityCheck([{ success: true }, { success: true }])).toBe(false);
    expect(forgetsIdentityCheck([{ success: true }, { success: false }])).toBe(true);
    expect(forgetsIdentityCheck([{ success: false }])).toBe(true);
  });
});
