import { describe, expect, it } from 'vitest';
import { planStep } from '../../../src/core/planner.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import { resolveRunInputs } from '../../../src/core/run-inputs.ts';
import { runnerAccountOf } from '../../../src/core/runner-identity.ts';
import { runnerSetupOf } from '../../../src/core/runner-setup.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import { API_VERSION } from '../../../src/schemas/kinds/api-group.ts';
import { resolveJobsPolicy } from '../../../src/schemas/kinds/jobs-policy.ts';
import type { TargetSpec } from '../../../src/schemas/kinds/target.ts';
import { TerraformMachineSpecSchema } from '../../../src/schemas/kinds/terraform-machine.ts';
import { snapshot as baseSnapshot, M_A, T0 } from './builders.ts';

/**
 * Issue 22: the step that adds our finalizer puts the plan key and the runner identity in place, so the
 * first Job-creating step finds them (one read each) instead of writing them. The identity must be the very
 * one that step would build, or the Job step would replace it all again.
 */

function spec(fields: object = {}): TargetSpec {
  return TerraformMachineSpecSchema.parse({ source: { image: 'registry.example.com/m:1' }, ...fields });
}

/** Machine team-a/m-a without our finalizer yet (the step that adds it sets the runner up). */
function snapshot(over: Partial<Snapshot> = {}): Snapshot {
  return baseSnapshot({ ...M_A, meta: {}, spec: spec(), ...over });
}

function setupOf(snap: Snapshot) {
  return runnerSetupOf(snap, resolveJobsPolicy(snap.spec?.jobs, undefined), undefined);
}

/** The identity the Job-creating step builds for the object's first apply (src/core/planner.ts planStart). */
function identityAtStart(snap: Snapshot) {
  const policy = resolveJobsPolicy(snap.spec?.jobs, undefined);
  const inputs = resolveRunInputs(snap, 'apply', policy, {}, undefined);
  if (inputs.kind !== 'resolved') throw new Error(inputs.kind);
  const { ref, uid } = snap;
  const owner = { apiVersion: API_VERSION, kind: ref.kind, name: ref.name, namespace: ref.namespace, uid };
  return runnerAccountOf(policy.serviceAccountName, { owner, source: inputs.source }).identity;
}

describe('runnerSetupOf', () => {
  it('RS1 a new object gets the plan key suffix and the identity its first Job step builds', () => {
    const snap = snapshot();
    const setup = setupOf(snap);
    expect(setup?.stateSuffix).toBe('m-m-a');
    expect(setup?.identity).toBeDefined();
    expect(setup?.identity).toEqual(identityAtStart(snap));
  });

  it('RS2 the same holds for a Cluster API-owned object (its state moves with the Cluster)', () => {
    const snap = snapshot({ ownedByClusterApi: true });
    expect(setupOf(snap)?.identity).toEqual(identityAtStart(snap));
    expect(setupOf(snap)?.identity?.stateSecret?.metadata.labels).toHaveProperty(
      'clusterctl.cluster.x-k8s.io/move',
    );
  });

  it('RS3 a spec that does not parse, or a paused object, sets nothing up', () => {
    expect(setupOf(snapshot({ spec: undefined, specProblem: 'bad' }))).toBeUndefined();
    expect(setupOf(snapshot({ paused: true }))).toBeUndefined();
  });

  it('RS4 a provisioned object gets the plan key only: its state is checked before any Job', () => {
    // A status from before suffixes were recorded names its state by the UID, and so does the plan key.
    expect(setupOf(snapshot({ status: { lastSuccess: { apply: T0.toISOString() } } }))).toEqual({
      stateSuffix: 'uid-1',
    });
    expect(setupOf(snapshot({ spec: spec({ providerID: 'demo://m-a' }) }))).toEqual({
      stateSuffix: 'm-m-a',
    });
  });

  it('RS5 an outputs Secret or a named account leaves the identity to the Job step', () => {
    expect(setupOf(snapshot({ spec: spec({ outputs: { secretName: 'out' } }) }))).toEqual({
      stateSuffix: 'm-m-a',
    });
    expect(setupOf(snapshot({ spec: spec({ jobs: { serviceAccountName: 'runner' } }) }))).toEqual({
      stateSuffix: 'm-m-a',
    });
  });

  it('RS6 the planner adds the finalizer with the setup, and none once the finalizer is there', () => {
    const config = { runnerImage: 'runner:test', maxActiveJobs: 200, clusterMaxActiveJobs: 20 };
    const first = planStep({ snap: snapshot(), now: T0, config });
    if (first.kind !== 'plan') throw new Error(first.read);
    expect(first.move).toMatchObject({ kind: 'finalizers', gone: false, finalizers: [FINALIZER] });
    expect(first.move.kind === 'finalizers' && first.move.setup?.identity).toBeTruthy();
  });
});
