import { describe, expect, it } from 'vitest';
import { planStep } from '../../../src/core/planner.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import type { PlanFacts } from '../../../src/core/step-plan.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';
import { iso, record, T0 } from './builders.ts';

/**
 * Issue 23 item 10: a spec that does not parse (stored before the CRD refused it, or by an older release).
 * Nothing starts from it; a deleting object with nothing to destroy is still finalized; a deleting object
 * with state waits SpecInvalid and says what an operator can do, never a silent wait.
 */

const PROBLEM = '0s must be between 1m and 8760h';

function snapshot(deleting: boolean, status: TargetStatus, records: Snapshot['records'] = []): Snapshot {
  return {
    ref: { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' },
    uid: 'uid-1',
    generation: 2,
    resourceVersion: '7',
    meta: {
      finalizers: ['keep.me/x', FINALIZER],
      ...(deleting ? { deletionTimestamp: iso(-60) } : {}),
    },
    spec: undefined,
    specProblem: PROBLEM,
    status,
    paused: false,
    jobs: [],
    records,
    referencedSecrets: new Map(),
    variablesSecretOptIns: new Map(),
    inputsHash: '',
  };
}

function plan(snap: Snapshot) {
  const facts: PlanFacts = {
    snap,
    now: T0,
    config: { runnerImage: 'runner:test', maxActiveJobs: 200, clusterMaxActiveJobs: 20 },
    pods: [],
  };
  const planned = planStep(facts);
  if (planned.kind !== 'plan') throw new Error(`expected a plan, got a read of ${planned.read}`);
  return planned;
}

const applied: TargetStatus = {
  lastSuccess: { apply: iso(-3600) },
  appliedInputsHash: 'h1',
  source: { pinnedImage: 'registry.example.com/m@sha256:abc' },
} as TargetStatus;

describe('a spec that does not parse (SpecInvalid)', () => {
  it('SI1 not deleting: waits SpecInvalid with the problem; nothing starts', () => {
    const planned = plan(snapshot(false, applied));
    expect(planned.move.kind).toBe('rest');
    expect(planned.outcome).toMatchObject({ reason: 'SpecInvalid', message: PROBLEM });
    // The status says it too, not the wait reason alone: the apply it holds back carries the problem.
    expect(planned.status?.conditions?.find((c) => c.type === 'ApplyJobSucceeded')).toMatchObject({
      status: 'Unknown',
      reason: 'SpecInvalid',
      message: PROBLEM,
    });
  });

  it('SI2 deleting, nothing ever applied: the finalizer goes (row 1 reads no spec), others kept', () => {
    const planned = plan(snapshot(true, {}));
    expect(planned.move).toEqual({ kind: 'finalizers', finalizers: ['keep.me/x'], gone: true });
    expect(planned.outcome.reason).toBe('DeletingWithoutState');
  });

  it('SI3 deleting after a successful destroy: the finalizer goes', () => {
    const planned = plan(
      snapshot(true, { lastSuccess: { apply: iso(-3600), destroy: iso(-60) } } as TargetStatus, [
        record('destroy', 'succeeded', -60),
      ]),
    );
    expect(planned.move).toMatchObject({ kind: 'finalizers', gone: true });
  });

  it('SI4 deleting with state: no destroy from guesses; SpecInvalid says to fix the spec or remove the finalizer', () => {
    const planned = plan(snapshot(true, applied));
    expect(planned.move.kind).toBe('rest');
    expect(planned.outcome.reason).toBe('SpecInvalid');
    expect(planned.outcome.message).toContain(PROBLEM);
    expect(planned.outcome.message).toContain('its destroy cannot run');
    expect(planned.outcome.message).toContain(
      'Fix the spec (it stays editable while the object is deleting)',
    );
    expect(planned.outcome.message).toContain(`remove the finalizer ${FINALIZER}`);
    expect(planned.status?.waitReason).toBe('SpecInvalid');
    // On the object, where a person looks: the op condition of the destroy it holds back carries the whole message.
    expect(planned.status?.conditions?.find((c) => c.type === 'ApplyJobSucceeded')).toMatchObject({
      status: 'Unknown',
      reason: 'SpecInvalid',
      message: planned.outcome.message,
    });
  });

  it('SI5 deleting, never applied but a Job not yet bookkept: waits, the finalizer stays', () => {
    const planned = plan(snapshot(true, {}, [record('apply', 'succeeded', -10, { bookkept: false })]));
    expect(planned.move.kind).toBe('rest');
    expect(planned.outcome.reason).toBe('SpecInvalid');
  });
});
