import { describe, expect, it } from 'vitest';
import { ownerLabels } from '../../../src/core/job-labels.ts';
import { buildJobManifest, type JobManifestInput } from '../../../src/core/job-manifest.ts';
import { buildRunConfig, buildRunSecret, stateSecretOf } from '../../../src/core/run-secret-manifest.ts';
import { RUN_DEFAULTS } from '../../../src/runner/cli.ts';
import {
  JOB_RUN_AS_USER,
  RESULT_WRITE_RESERVE_SECONDS,
  RUN_CONFIG_FS_GROUP,
} from '../../../src/schemas/job-contract.ts';
import { resolveJobsPolicy } from '../../../src/schemas/kinds/jobs-policy.ts';
import { parseRunConfig } from '../../../src/schemas/run-config.ts';

const input: JobManifestInput = {
  owner: {
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
    kind: 'TerraformMachine',
    name: 'm-a',
    namespace: 'team-a',
    uid: 'uid-1',
    generation: 4,
    clusterName: 'demo',
  },
  name: 'captf-m-m-a-apply-a2-abcdef',
  op: 'apply',
  attempt: 2,
  inputsHash: 'h1',
  image: 'registry.example.com/m:1',
  runnerImage: 'registry.example.com/captf-runner:0.1.0',
  policy: resolveJobsPolicy({ env: [{ name: 'HTTPS_PROXY', value: 'p' }] }),
  serviceAccountName: 'captf-runner-m-m-a',
};

describe('buildJobManifest: DESIGN.md section 9', () => {
  const manifest = buildJobManifest(input);
  const pod = manifest.spec.template.spec;

  it('S9.labels carries the seven labels on the Job and its pods, and the owner reference', () => {
    const labels = {
      'captf.io/managed': 'true',
      'captf.io/owner-kind': 'TerraformMachine',
      'captf.io/owner-name': 'm-a',
      'captf.io/owner-uid': 'uid-1',
      'captf.io/op': 'apply',
      'captf.io/attempt': '2',
      'cluster.x-k8s.io/cluster-name': 'demo',
    };
    expect(manifest.metadata.labels).toEqual(labels);
    expect(manifest.spec.template.metadata.labels).toEqual(labels);
    expect(manifest.metadata.ownerReferences).toEqual([
      {
        apiVersion: input.owner.apiVersion,
        kind: 'TerraformMachine',
        name: 'm-a',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(manifest.metadata.annotations).toEqual({
      'captf.io/inputs-hash': 'h1',
      'captf.io/generation': '4',
    });
  });

  it('S9.labels an object outside any Cluster API cluster gets no empty cluster-name label; plans share the owner labels', () => {
    const lone = buildJobManifest({ ...input, owner: { ...input.owner, clusterName: '' } });
    expect(lone.metadata.labels).not.toHaveProperty(['cluster.x-k8s.io/cluster-name']);
    const { 'captf.io/op': _op, 'captf.io/attempt': _attempt, ...owner } = manifest.metadata.labels;
    expect(ownerLabels({ kind: 'TerraformMachine', name: 'm-a', uid: 'uid-1', clusterName: 'demo' })).toEqual(
      owner,
    );
  });

  it('S9.shape backoffLimit 0, restartPolicy Never, no TTL, deadline from the spec (the Job and its pod), grace 600', () => {
    expect(manifest.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 3600 });
    expect(manifest.spec).not.toHaveProperty('ttlSecondsAfterFinished');
    // The pod's own deadline ends a pod its Job's orphaning delete left running (DESIGN.md section 7).
    expect(pod).toMatchObject({
      restartPolicy: 'Never',
      activeDeadlineSeconds: 3600,
      terminationGracePeriodSeconds: 600,
    });
  });

  it('S9.containers: init `runner` copies into /captf/bin; `source` runs the runner with --op; termination messages from File', () => {
    expect(pod.initContainers).toEqual([
      expect.objectContaining({
        name: 'runner',
        image: input.runnerImage,
        args: ['copy', '/captf/bin'],
        terminationMessagePolicy: 'File',
      }),
    ]);
    const [source] = pod.containers;
    expect(source).toMatchObject({ name: 'source', image: input.image, terminationMessagePolicy: 'File' });
    expect([...(source?.command ?? []), ...(source?.args ?? [])].join(' ')).toContain(
      '/captf/bin/runner run --op=apply',
    );
    expect(source?.env).toEqual([{ name: 'HTTPS_PROXY', value: 'p' }]);
  });

  it('S9.token a TF_TOKEN_<host> registry token reaches the source container from its Secret (issue 25 item 3)', () => {
    const env = [
      {
        name: 'TF_TOKEN_registry_example_com',
        valueFrom: { secretKeyRef: { name: 'registry-token', key: 'token' } },
      },
    ];
    const withToken = buildJobManifest({ ...input, policy: resolveJobsPolicy({ env }) });
    expect(withToken.spec.template.spec.containers[0]?.env).toEqual(env);
  });

  it('S9.secret mounts the per-run Secret read-only at /captf/config, readable by any non-root USER through fsGroup', () => {
    expect(pod.volumes).toContainEqual({
      name: 'captf-config',
      secret: { secretName: `captf-run-${input.name}`, defaultMode: 0o440 },
    });
    // 0o440 lets the group read; the fsGroup is that group, and the kubelet adds it to every container.
    expect(pod.securityContext.fsGroup).toBe(RUN_CONFIG_FS_GROUP);
    expect(pod.containers[0]?.volumeMounts).toContainEqual({
      name: 'captf-config',
      mountPath: '/captf/config',
      readOnly: true,
    });
  });

  it('I16.6 restricted: the pod runs non-root as 65532 with the runtime default seccomp profile; fsGroup kept', () => {
    expect(pod.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: JOB_RUN_AS_USER,
      runAsGroup: JOB_RUN_AS_USER,
      fsGroup: RUN_CONFIG_FS_GROUP,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // The runner image's own USER (images/runner.dockerfile), so the init container runs as it was built.
    expect(JOB_RUN_AS_USER).toBe(65_532);
  });

  it('I16.6 restricted: both containers forbid privilege escalation, drop every capability, keep / read-only', () => {
    const containers = [...pod.initContainers, ...pod.containers];
    expect(containers.map((c) => c.name)).toEqual(['runner', 'source']);
    for (const container of containers) {
      expect(container.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        readOnlyRootFilesystem: true,
      });
    }
    // No container may undo the pod's non-root user or seccomp profile (restricted checks both levels).
    expect(
      containers.some((c) => 'runAsUser' in c.securityContext || 'seccompProfile' in c.securityContext),
    ).toBe(false);
  });

  it('I16.6 restricted: every Job gets its own security context objects (no shared state between manifests)', () => {
    const other = buildJobManifest(input).spec.template.spec;
    expect(other.securityContext).toEqual(pod.securityContext);
    expect(other.securityContext).not.toBe(pod.securityContext);
    expect(other.containers[0]?.securityContext).not.toBe(pod.containers[0]?.securityContext);
  });

  it('S10.stop: the runner kills the runtime early enough to write its interrupted result before grace − 30 s', () => {
    const flag = pod.containers[0]?.args.find((arg) => arg.startsWith('--stop-timeout='));
    const stopTimeoutSeconds = Number(flag?.slice('--stop-timeout='.length));
    expect(stopTimeoutSeconds).toBe(RUN_DEFAULTS.stopTimeoutSeconds);
    expect(stopTimeoutSeconds + RESULT_WRITE_RESERVE_SECONDS).toBeLessThanOrEqual(
      pod.terminationGracePeriodSeconds - 30,
    );
  });

  it('S2.resources default requests 250m / 512Mi, memory limit 2Gi, no CPU limit', () => {
    expect(pod.containers[0]?.resources).toEqual({
      requests: { cpu: '250m', memory: '512Mi' },
      limits: { memory: '2Gi' },
    });
  });

  it('is deterministic (a retry after a crash rebuilds the same Job)', () => {
    expect(buildJobManifest(input)).toEqual(manifest);
  });
});

describe('buildRunConfig and buildRunSecret', () => {
  const config = buildRunConfig({
    namespace: 'team-a',
    stateSuffix: 'm-m-a',
    variables: { size: 'small', token: 'overridden' },
    secretVariables: { token: 'tok-123-canary' },
    contractInputs: {
      values: { machine_name: 'm-a', bootstrap_data: '#cloud-config' },
      sensitive: ['bootstrap_data'],
    },
    backend: undefined,
    backendSecretData: {},
    lockTimeoutSeconds: 300,
    applyPolicy: 'Automatic',
    expectedPlanDigest: `sha256:${'a'.repeat(64)}`,
    planHmacKey: 'k'.repeat(32),
  });

  it('the run config parses with the runner schema; Secret variables win and are marked secret', () => {
    const parsed = parseRunConfig(JSON.stringify(config));
    expect(parsed.ok).toBe(true);
    expect(config.variables).toEqual({ size: 'small', token: 'tok-123-canary' });
    expect(config.secretInputs).toEqual(['token']);
  });

  it('the contract inputs travel apart from the variables, the sensitive ones named', () => {
    expect(config.contractInputs).toEqual({ machine_name: 'm-a', bootstrap_data: '#cloud-config' });
    expect(config.sensitiveContractInputs).toEqual(['bootstrap_data']);
    expect(config.variables).not.toHaveProperty('bootstrap_data');
  });

  it("the default backend is kubernetes with the object's state suffix", () => {
    expect(config.backend).toEqual({
      type: 'kubernetes',
      config: { secret_suffix: 'm-m-a', namespace: 'team-a', in_cluster_config: true },
      secretKeys: [],
    });
  });

  it('the per-run Secret is owned by its Job and carries its labels', () => {
    const secret = buildRunSecret({
      job: { name: 'J1', namespace: 'team-a', uid: 'job-uid', labels: { a: 'b' }, ownerReferences: [] },
      config,
    });
    expect(secret.metadata).toMatchObject({
      name: 'captf-run-J1',
      labels: { a: 'b' },
      ownerReferences: [{ kind: 'Job', uid: 'job-uid', controller: true, blockOwnerDeletion: false }],
    });
    expect(Object.keys(secret.stringData)).toEqual(['run.json']);
  });
});

describe('stateSecretOf: where captf_state_bytes is measured (DESIGN.md section 14)', () => {
  it("is the kubernetes backend's tfstate-default-<suffix> in the object's namespace, or the spec's own settings", () => {
    expect(stateSecretOf({ backend: undefined, namespace: 'team-a', stateSuffix: 'm-m-a' })).toEqual({
      namespace: 'team-a',
      name: 'tfstate-default-m-m-a',
      suffix: 'm-m-a',
    });
    expect(
      stateSecretOf({
        backend: { type: 'kubernetes', config: { secret_suffix: 'shared', namespace: 'states' } },
        namespace: 'team-a',
        stateSuffix: 'm-m-a',
      }),
    ).toEqual({ namespace: 'states', name: 'tfstate-default-shared', suffix: 'shared' });
  });

  it('is undefined for any other backend: no Secret size limit applies to its state', () => {
    expect(
      stateSecretOf({ backend: { type: 's3', config: {} }, namespace: 'team-a', stateSuffix: 'm-m-a' }),
    ).toBe(undefined);
  });
});
