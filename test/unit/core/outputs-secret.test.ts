import { describe, expect, it } from 'vitest';
import { classifyJob } from '../../../src/core/classify.ts';
import { inputsHash, inputsOf } from '../../../src/core/inputs-hash.ts';
import {
  buildOutputsSecret,
  foreignOutputsSecretMessage,
  OUTPUTS_OF_LABEL,
  OUTPUTS_WRITER_ANNOTATION,
  outputsSecretHolder,
} from '../../../src/core/outputs-secret.ts';
import { type RunContext, recordRun } from '../../../src/core/record-run.ts';
import { NO_REDACTION } from '../../../src/core/redaction.ts';
import { buildRunConfig } from '../../../src/core/run-secret-manifest.ts';
import { buildRunnerIdentity } from '../../../src/core/runner-identity.ts';
import type { RunnerResult } from '../../../src/schemas/result.ts';
import { job, pod, result, T0, toBookkeep } from './builders.ts';

// Issue 24 item 3: the controller's side of the outputs Secret, pure.

const owner = {
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
  kind: 'TerraformMachine' as const,
  name: 'm-a',
  namespace: 'team-a',
  uid: 'uid-a',
};

describe('buildOutputsSecret', () => {
  it('is empty, in the object namespace, owned by the object (its controller), labelled as its outputs, naming its one writer', () => {
    const secret = buildOutputsSecret({ owner, secretName: 'm-a-outputs', writer: 'captf-runner-m-m-a' });
    expect(secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 'm-a-outputs',
        namespace: 'team-a',
        labels: {
          'captf.io/owner-kind': 'TerraformMachine',
          'captf.io/owner-name': 'm-a',
          'captf.io/owner-uid': 'uid-a',
          [OUTPUTS_OF_LABEL]: 'm-a',
        },
        annotations: { [OUTPUTS_WRITER_ANNOTATION]: 'captf-runner-m-m-a' },
        ownerReferences: [
          {
            apiVersion: owner.apiVersion,
            kind: 'TerraformMachine',
            name: 'm-a',
            uid: 'uid-a',
            controller: true,
            blockOwnerDeletion: false,
          },
        ],
      },
    });
  });
});

describe('outputsSecretHolder', () => {
  it.each([
    { what: 'its controller reference', refs: [{ uid: 'uid-a', controller: true }], holder: 'ours' },
    { what: 'no owner', refs: undefined, holder: 'foreign' },
    { what: 'another object', refs: [{ uid: 'uid-b', controller: true }], holder: 'foreign' },
    { what: 'a non-controller reference to the object', refs: [{ uid: 'uid-a' }], holder: 'foreign' },
  ])('a Secret with $what is $holder', ({ refs, holder }) => {
    expect(outputsSecretHolder({ metadata: { ...(refs ? { ownerReferences: refs } : {}) } }, 'uid-a')).toBe(
      holder,
    );
  });

  it('the refusal names the Secret and the way out', () => {
    expect(foreignOutputsSecretMessage('app-credentials')).toBe(
      "Secret app-credentials (spec.outputs.secretName) exists and is not this object's: the runner may only write a Secret the controller created for this object; name another Secret, or delete that one",
    );
  });
});

describe('the runner identity and the run config', () => {
  const source = { backend: undefined, namespace: 'team-a', stateSuffix: 'm-m-a' };

  it('the Role adds get and update of exactly the outputs Secret, whatever the backend', () => {
    const withOutputs = buildRunnerIdentity({
      owner,
      source: { ...source, outputsSecretName: 'm-a-outputs' },
    });
    // Last but the run log's rule, which every identity has.
    expect(withOutputs.role.rules.at(-2)).toEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: ['m-a-outputs'],
      verbs: ['get', 'update'],
    });
    expect(withOutputs.role.rules).toHaveLength(4);
    const s3 = buildRunnerIdentity({
      owner,
      source: { ...source, backend: { type: 's3' }, outputsSecretName: 'm-a-outputs' },
    });
    expect(s3.role.rules).toEqual(withOutputs.role.rules.slice(-2));
    // A new name is a new identity: the RoleBinding's digest changes, so the Role is rewritten.
    const without = buildRunnerIdentity({ owner, source });
    expect(without.role.rules).toHaveLength(3);
    expect(without.roleBinding.metadata.annotations).not.toEqual(
      withOutputs.roleBinding.metadata.annotations,
    );
  });

  it('the run config names the Secret in the object namespace', () => {
    const config = buildRunConfig({
      ...source,
      variables: {},
      secretVariables: {},
      contractInputs: { values: {}, sensitive: [] },
      backend: undefined,
      backendSecretData: {},
      lockTimeoutSeconds: 60,
      applyPolicy: 'Automatic',
      planHmacKey: 'k'.repeat(32),
      outputsSecretName: 'm-a-outputs',
    });
    expect(config.outputsSecret).toEqual({ namespace: 'team-a', name: 'm-a-outputs' });
  });

  it('naming a Secret changes the inputs hash (its first apply fills it); no name keeps the hash', () => {
    const spec = { source: { image: 'm:1' } };
    const plain = inputsHash(inputsOf(spec));
    expect(inputsHash(inputsOf({ ...spec, outputs: { secretName: 'm-a-outputs' } }))).not.toBe(plain);
    expect(inputsHash(inputsOf(spec))).toBe(plain);
  });
});

describe('bookkeeping records where the outputs went, never a value', () => {
  const record = toBookkeep();
  const context: RunContext = {
    kind: 'TerraformMachine',
    now: T0,
    deleting: false,
    spec: {},
    redact: NO_REDACTION,
    records: [],
  };
  const recorded = (runnerResult: RunnerResult, status = {}) => {
    const run = classifyJob({
      op: runnerResult.op,
      kind: 'TerraformMachine',
      job: job([['Complete']], { succeeded: 1 }),
      pods: [pod('p1', { exitCode: 0, message: JSON.stringify(runnerResult) }, { phase: 'Succeeded' })],
      now: T0,
    });
    return recordRun(
      status,
      job([['Complete']], { succeeded: 1 }),
      { ...record, op: runnerResult.op },
      run,
      context,
    ).status;
  };

  it.each(['apply', 'refresh'] as const)('a successful %s records the Secret and the listed names', (op) => {
    const status = recorded(
      result({ op, result: 'succeeded', outputsSecret: { name: 'm-a-outputs', outputs: ['endpoint'] } }),
    );
    expect(status.outputs).toEqual({ secretName: 'm-a-outputs', names: ['endpoint'] });
  });

  it('names dropped to fit the result: the Secret without names', () => {
    const status = recorded(
      result({
        op: 'apply',
        result: 'succeeded',
        outputsSecret: { name: 'm-a-outputs' },
        dropped: ['outputsSecret.outputs'],
      }),
    );
    expect(status.outputs).toEqual({ secretName: 'm-a-outputs' });
  });

  it('a successful apply that wrote none (the spec names none now) leaves no stale pointer; a drift keeps it', () => {
    const before = { outputs: { secretName: 'old', names: ['x'] } };
    expect(recorded(result({ op: 'apply', result: 'succeeded' }), before).outputs).toBeUndefined();
    expect(recorded(result({ op: 'drift', result: 'succeeded' }), before).outputs).toEqual(before.outputs);
  });
});
