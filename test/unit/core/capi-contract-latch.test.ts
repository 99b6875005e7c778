import { describe, expect, it } from 'vitest';
import { classifyJob } from '../../../src/core/classify.ts';
import { type CapiContext, drivenByClusterApi } from '../../../src/core/cluster-api.ts';
import { moduleInputsDigest, moduleInputsOf } from '../../../src/core/module-inputs.ts';
import { type RunContext, recordRun } from '../../../src/core/record-run.ts';
import { NO_REDACTION } from '../../../src/core/redaction.ts';
import { resolveRunInputs } from '../../../src/core/run-inputs.ts';
import { CONTRACT_OUTPUTS_OF_KIND } from '../../../src/schemas/contract-outputs.ts';
import { TARGET_KINDS, type TargetKind } from '../../../src/schemas/kinds/api-group.ts';
import { resolveJobsPolicy } from '../../../src/schemas/kinds/jobs-policy.ts';
import type { RunnerResult } from '../../../src/schemas/result.ts';
import { job, pod, result, T0, toBookkeep } from './builders.ts';

// Issue 23 item 11: what the module contract still owed Cluster API. (a) A destroy runs after Cluster API
// deleted the bootstrap Secret, so a module whose bootstrap_data has no default gets "" then. (b) A Cluster
// API cluster's controlPlaneEndpoint, like a machine's providerID, is set once and never changed.

const ENDPOINT = { host: 'cp.demo.example', port: 6443 };
const MOVED = { host: 'cp2.demo.example', port: 6443 };

const machineOwner = {
  kind: 'Machine' as const,
  name: 'md-0-abc12-x7k2p',
  controlPlane: false,
  bootstrapDataSecretName: 'md-0-abc12-x7k2p-bootstrap',
};
/** A Machine whose bootstrap Secret is gone: Cluster API deleted it with the Machine's bootstrap config. */
const bootstrapGone: CapiContext = {
  expectsOwner: false,
  clusterInfrastructureProvisioned: true,
  owner: machineOwner,
};
const bootstrapHere: CapiContext = {
  ...bootstrapGone,
  bootstrapData: { value: '#cloud-config\nruncmd: [tok-123-canary]', format: 'cloud-config' },
};
const machineRef = { kind: 'TerraformMachine' as const, namespace: 'team-a', name: 'md-0-abc12-infra' };

describe('bootstrap_data on destroy (docs/module-contract.md)', () => {
  const rows = [
    {
      id: 'B1',
      name: 'a destroy without bootstrap data gets bootstrap_data "" and the default format, not secret',
      source: { ref: machineRef, capi: bootstrapGone, op: 'destroy' as const },
      bootstrap: { bootstrap_data: '', bootstrap_format: 'cloud-config' },
      sensitive: [],
    },
    {
      id: 'B2',
      name: 'a destroy of a machine whose owner is gone too (no Cluster API facts) still gets it',
      source: { ref: machineRef, capi: { expectsOwner: true }, op: 'destroy' as const },
      bootstrap: { bootstrap_data: '', bootstrap_format: 'cloud-config' },
      sensitive: [],
    },
    {
      id: 'B3',
      name: 'a destroy with the bootstrap data still there gets the data, sensitive',
      source: { ref: machineRef, capi: bootstrapHere, op: 'destroy' as const },
      bootstrap: {
        bootstrap_data: '#cloud-config\nruncmd: [tok-123-canary]',
        bootstrap_format: 'cloud-config',
      },
      sensitive: ['bootstrap_data'],
    },
    {
      id: 'B4',
      name: 'an apply without bootstrap data gets none (it waits for it instead)',
      source: { ref: machineRef, capi: bootstrapGone, op: 'apply' as const },
      bootstrap: {},
      sensitive: [],
    },
    {
      id: 'B5',
      name: 'a pool destroy gets it like a machine',
      source: { ref: { ...machineRef, kind: 'TerraformMachinePool' as const }, op: 'destroy' as const },
      bootstrap: { bootstrap_data: '', bootstrap_format: 'cloud-config' },
      sensitive: [],
    },
    {
      id: 'B6',
      name: 'a cluster destroy gets none: bootstrap data is a machine input',
      source: { ref: { ...machineRef, kind: 'TerraformCluster' as const }, op: 'destroy' as const },
      bootstrap: {},
      sensitive: [],
    },
  ];
  it.each(rows)('$id $name', ({ source, bootstrap, sensitive }) => {
    const inputs = moduleInputsOf(source);
    const got = Object.fromEntries(
      Object.entries(inputs.values).filter(([name]) => name.startsWith('bootstrap_')),
    );
    expect(got).toEqual(bootstrap);
    expect(inputs.sensitive).toEqual(sensitive);
  });

  it('B7 the stand-in is no input change: the inputs hash is computed without an op', () => {
    expect(moduleInputsDigest(moduleInputsOf({ ref: machineRef, capi: bootstrapGone }))).toBe(
      moduleInputsDigest(moduleInputsOf({ ref: machineRef, capi: bootstrapGone, op: 'apply' })),
    );
  });
});

/** A snapshot as far as resolveRunInputs reads it. */
function snap(
  kind: 'TerraformCluster' | 'TerraformMachine',
  spec: Record<string, unknown>,
  capi: { capi?: CapiContext; ownedByClusterApi?: boolean },
) {
  return {
    ref: { kind, namespace: 'team-a', name: 'demo' },
    uid: 'uid-1',
    jobs: [],
    status: {},
    spec: { source: { image: 'registry.example.com/m:1' }, ...spec } as never,
    referencedSecrets: new Map(),
    variablesSecretOptIns: new Map(),
    ...capi,
  };
}

describe('resolveRunInputs: what the run config latches', () => {
  const policy = resolveJobsPolicy(undefined);

  it('L1 a Cluster-owned cluster with an endpoint hands it to the run; a standalone one does not', () => {
    const owned = resolveRunInputs(
      snap('TerraformCluster', { controlPlaneEndpoint: ENDPOINT }, { ownedByClusterApi: true }),
      'apply',
      policy,
      {},
    );
    expect(owned.kind === 'resolved' && owned.source.controlPlaneEndpoint).toEqual(ENDPOINT);
    const standalone = resolveRunInputs(
      snap('TerraformCluster', { controlPlaneEndpoint: ENDPOINT }, {}),
      'apply',
      policy,
      {},
    );
    expect(standalone.kind === 'resolved' && standalone.source).not.toHaveProperty('controlPlaneEndpoint');
    const unset = resolveRunInputs(
      snap('TerraformCluster', {}, { ownedByClusterApi: true }),
      'apply',
      policy,
      {},
    );
    expect(unset.kind === 'resolved' && unset.source).not.toHaveProperty('controlPlaneEndpoint');
    // A port set ahead without a host is no endpoint yet: nothing to keep.
    const hostless = resolveRunInputs(
      snap(
        'TerraformCluster',
        { controlPlaneEndpoint: { host: '', port: 6443 } },
        { ownedByClusterApi: true },
      ),
      'apply',
      policy,
      {},
    );
    expect(hostless.kind === 'resolved' && hostless.source).not.toHaveProperty('controlPlaneEndpoint');
  });

  it('L2 the destroy of a Cluster API machine whose bootstrap Secret is gone runs with bootstrap_data ""', () => {
    const inputs = resolveRunInputs(
      snap('TerraformMachine', {}, { capi: bootstrapGone }),
      'destroy',
      policy,
      {},
    );
    expect(inputs.kind === 'resolved' && inputs.source.contractInputs.values).toMatchObject({
      bootstrap_data: '',
    });
  });

  it('L3 Cluster API drives a machine with a Cluster API context and a cluster its Cluster owns', () => {
    expect(drivenByClusterApi({ capi: { expectsOwner: true } })).toBe(true);
    expect(drivenByClusterApi({ ownedByClusterApi: true })).toBe(true);
    expect(drivenByClusterApi({})).toBe(false);
  });
});

/** The classification of a `kind`'s Job whose one pod ended with `runnerResult`. */
function classified(runnerResult: RunnerResult, exitCode: number, kind: TargetKind = 'TerraformCluster') {
  return classifyJob({
    op: 'apply',
    kind,
    job: exitCode === 0 ? job([['Complete']], { succeeded: 1 }) : job([['Failed', 'BackoffLimitExceeded']]),
    pods: [
      pod(
        'p1',
        { exitCode, message: JSON.stringify(runnerResult) },
        { phase: exitCode ? 'Failed' : 'Succeeded' },
      ),
    ],
    now: T0,
  });
}

/** The run context of a successful apply of a `kind` with `spec`, driven by Cluster API or not. */
function runContext(kind: TargetKind, spec: RunContext['spec'], capiDriven: boolean): RunContext {
  return { kind, now: T0, deleting: false, spec, capiDriven, redact: NO_REDACTION, records: [] };
}

describe('controlPlaneEndpoint is latched under Cluster API, like providerID', () => {
  const refusal = (reason: 'ControlPlaneEndpointChange' | 'ProviderIDChange') =>
    result({
      op: 'apply',
      result: 'failed',
      error: { kind: 'step', step: 'show-json', summary: 'the plan would change it', reason },
    });

  it.each(['ControlPlaneEndpointChange', 'ProviderIDChange'] as const)(
    'E1 a run the runner refused with %s is that reason: failed, counted, JobFailed',
    (reason) => {
      const c = classified(refusal(reason), 1);
      expect([c.reason, c.result, c.counted, c.conditionStatus, c.error?.kind]).toEqual([
        reason,
        'failed',
        true,
        'False',
        'step',
      ]);
    },
  );

  const applied = classified(
    result({ op: 'apply', result: 'succeeded', outputs: { controlPlaneEndpoint: MOVED } }),
    0,
  );
  const rows = [
    {
      id: 'E2',
      name: 'a Cluster API cluster keeps the endpoint it has',
      spec: { controlPlaneEndpoint: ENDPOINT },
      capiDriven: true,
      patch: undefined,
    },
    {
      id: 'E3',
      name: 'a Cluster API cluster without one takes the first',
      spec: {},
      capiDriven: true,
      patch: MOVED,
    },
    {
      id: 'E3b',
      name: 'a Cluster API cluster with only a port set ahead (no host) takes the first',
      spec: { controlPlaneEndpoint: { host: '', port: 6443 } },
      capiDriven: true,
      patch: MOVED,
    },
    {
      id: 'E4',
      name: 'a standalone cluster follows its module',
      spec: { controlPlaneEndpoint: ENDPOINT },
      capiDriven: false,
      patch: MOVED,
    },
  ];
  it.each(rows)('$id $name', ({ spec, capiDriven, patch }) => {
    expect(applied.reason).toBe('ApplySucceeded');
    const recorded = recordRun(
      {},
      job([['Complete']], { succeeded: 1 }),
      toBookkeep(),
      applied,
      runContext('TerraformCluster', spec, capiDriven),
    );
    expect(recorded.spec.controlPlaneEndpoint).toEqual(patch);
  });
});

// The contract outputs a kind records are named in one list (src/schemas/contract-outputs.ts) and written
// by kind in src/core/record-run.ts: each name of the list must reach its object, or it is checked and then
// silently dropped (a cluster's exports and failure domains once were, by the result's parse).
describe('every contract output a kind records reaches its object after a successful apply', () => {
  const VALUES = {
    controlPlaneEndpoint: ENDPOINT,
    failureDomains: [{ name: 'zone-a', controlPlane: true }],
    exports: { cidr: '10.20.0.0/16' },
    providerID: 'captf-local://m-a/1',
    addresses: [{ type: 'InternalIP', address: '10.20.0.101' }],
    providerIDList: ['captf-local://mp/1'],
    replicas: 1,
  } as const;
  const rows = TARGET_KINDS.flatMap((kind) => CONTRACT_OUTPUTS_OF_KIND[kind].map((name) => ({ kind, name })));
  it.each(rows)('R1 $kind records $name', ({ kind, name }) => {
    const value = VALUES[name];
    const run = classified(result({ op: 'apply', result: 'succeeded', outputs: { [name]: value } }), 0, kind);
    const recorded = recordRun(
      {},
      job([['Complete']], { succeeded: 1 }),
      toBookkeep(),
      run,
      runContext(kind, {}, false),
    );
    const where = { ...recorded.status, ...recorded.spec } as Record<string, unknown>;
    expect(where[name]).toEqual(value);
  });
});
