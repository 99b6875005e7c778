import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { describePlan } from '../../../src/core/describe-plan.ts';
import { planStep } from '../../../src/core/planner.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import {
  ACCEPT_EMPTY_STATE_ANNOTATION,
  type StateContent,
  stateMayHoldResources,
} from '../../../src/core/state-evidence.ts';
import type { PlanFacts, StepPlan } from '../../../src/core/step-plan.ts';
import type { TargetKind } from '../../../src/schemas/kinds/api-group.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import { stateContentOf } from '../../../src/step/state-content.ts';
import { iso, planFacts, snapshot } from './builders.ts';

// Issue 23 item 5: lost state is never applied from nothing, and a lost status never drops a finalizer
// over a state that holds resources.

function plan(facts: PlanFacts): StepPlan {
  const planned = planStep(facts);
  if (planned.kind !== 'plan') throw new Error(`planner asked for ${planned.read}`);
  return planned;
}

/** A machine whose inputs changed after a successful apply: the planner is about to start an apply. */
function provisioned(extra: Partial<Snapshot> = {}): Snapshot {
  return snapshot({
    inputsHash: 'h2',
    status: { lastSuccess: { apply: iso(-600) }, appliedInputsHash: 'h1', stateSuffix: 'm-web' },
    ...extra,
  });
}

const spec = (fields: Record<string, unknown>, kind: TargetKind = 'TerraformMachine') =>
  TARGET_SCHEMAS[kind].spec.parse({ source: { image: 'registry.example.com/m:1' }, ...fields });

describe('an apply of a provisioned object reads its state first (StateMissing)', () => {
  it('SM1 the planner asks for the state before an apply of a provisioned object, and only then', () => {
    expect(planStep(planFacts(provisioned()))).toEqual({ kind: 'read', read: 'state' });
    // Never provisioned: the first apply reads nothing more.
    const fresh = plan(planFacts(snapshot()));
    expect(fresh.move.kind).toBe('start');
  });

  const lost: { id: string; name: string; state: StateContent }[] = [
    { id: 'SM2', name: 'a missing Secret', state: 'missing' },
    { id: 'SM3', name: 'a Secret OpenTofu never wrote (the placeholder)', state: 'unwritten' },
  ];
  it.each(lost)(
    '$id $name waits StateMissing: no Job, a Warning Event, the condition says why',
    ({ state }) => {
      const planned = plan(planFacts(provisioned(), { state }));
      expect(planned.outcome.reason).toBe('StateMissing');
      expect(planned.move).toEqual({ kind: 'rest', healLease: true });
      expect(planned.status?.waitReason).toBe('StateMissing');
      expect(planned.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'StateMissing']]);
      expect(planned.outcome.message).toContain('tfstate-default-m-web');
      expect(planned.outcome.message).toContain(ACCEPT_EMPTY_STATE_ANNOTATION);
      expect(describePlan(planned, provisioned()).message).toContain('tfstate-default-m-web');
      // Written once: the next step of the same wait writes nothing and emits nothing.
      const again = plan(planFacts(provisioned({ status: planned.status ?? {} }), { state }));
      expect(again.status).toBeUndefined();
      expect(again.events).toEqual([]);
    },
  );

  it('SM4 a state OpenTofu wrote (with resources or without: a module may manage none), or one that cannot be read, applies as before', () => {
    for (const state of ['resources', 'no-resources', 'unreadable'] as const) {
      const planned = plan(planFacts(provisioned(), { state }));
      expect(planned.move.kind).toBe('start');
      if (planned.move.kind === 'start') expect(planned.move.start.consumeAnnotation).toBeUndefined();
    }
  });

  it('SM5 the annotation lets the apply start and is spent by it', () => {
    const snap = provisioned({
      meta: { ...provisioned().meta, annotations: { [ACCEPT_EMPTY_STATE_ANNOTATION]: 'true' } },
    });
    const planned = plan(planFacts(snap, { state: 'missing' }));
    if (planned.move.kind !== 'start') throw new Error(`no start: ${planned.outcome.reason}`);
    expect(planned.move.start).toMatchObject({
      op: 'apply',
      consumeAnnotation: ACCEPT_EMPTY_STATE_ANNOTATION,
    });
    expect(describePlan(planned, snap).message).toContain(
      `remove the annotation ${ACCEPT_EMPTY_STATE_ANNOTATION}`,
    );
  });

  const evidence = [
    {
      id: 'SM6',
      name: 'spec.providerID (a status lost in a restore)',
      kind: 'TerraformMachine' as const,
      spec: { providerID: 'demo://web' },
    },
    {
      id: 'SM8',
      name: 'spec.providerIDList',
      kind: 'TerraformMachinePool' as const,
      spec: { providerIDList: ['demo://a'] },
    },
  ];
  it('SM7 a cluster whose endpoint a person set before its first apply is not taken for a provisioned one', () => {
    const snap = snapshot({
      ref: { kind: 'TerraformCluster', namespace: 'default', name: 'web' },
      spec: spec({ controlPlaneEndpoint: { host: '10.0.0.1', port: 6443 } }, 'TerraformCluster'),
    });
    const planned = plan(planFacts(snap));
    expect(planned.move.kind === 'start' && planned.move.start.op).toBe('apply');
    expect(planned.outcome.reason).not.toBe('StateMissing');
  });
  it.each(evidence)('$id $name shows the object was provisioned', (row) => {
    const snap = snapshot({
      ref: { kind: row.kind, namespace: 'default', name: 'web' },
      spec: spec(row.spec, row.kind),
    });
    const planned = plan(planFacts(snap, { state: 'missing' }));
    expect(planned.outcome.reason).toBe('StateMissing');
  });

  it('SM9 another backend is not checked (its state is not ours to see)', () => {
    const snap = provisioned({ spec: spec({ backend: { type: 's3', config: { bucket: 'b' } } }) });
    expect(plan(planFacts(snap)).move.kind).toBe('start');
  });
});

describe('a deleting object without a recorded apply reads its state before it goes', () => {
  const deleting = (status: Snapshot['status'] = {}) =>
    snapshot({ meta: { ...snapshot().meta, deletionTimestamp: iso(0) }, status });

  it('SD1 the planner asks for the state before it drops the finalizer', () => {
    expect(planStep(planFacts(deleting()))).toEqual({ kind: 'read', read: 'state' });
  });
  it('SD2 a state with resources destroys', () => {
    const planned = plan(planFacts(deleting(), { state: 'resources' }));
    expect(planned.move.kind === 'start' && planned.move.start.op).toBe('destroy');
  });
  it('SD3 no state (missing or empty) drops the finalizer', () => {
    for (const state of ['missing', 'unwritten', 'no-resources'] as const)
      expect(plan(planFacts(deleting(), { state })).outcome.reason).toBe('DeletingWithoutState');
  });
  it('SD4 after a recorded destroy, a state still holding resources is kept and reported, never destroyed again', () => {
    const destroyed = deleting({ lastSuccess: { apply: iso(-900), destroy: iso(-60) }, lastRun: undefined });
    expect(planStep(planFacts(destroyed))).toEqual({ kind: 'read', read: 'state' });
    const planned = plan(planFacts(destroyed, { state: 'resources' }));
    expect(planned.outcome.reason).toBe('DeletingWithoutState');
    expect(planned.move).toMatchObject({
      kind: 'finalizers',
      gone: true,
      state: { cleanup: { kind: 'keep' } },
    });
    const empty = plan(planFacts(destroyed, { state: 'no-resources' }));
    expect(empty.move).toMatchObject({
      kind: 'finalizers',
      gone: true,
      state: { cleanup: { kind: 'delete' } },
    });
  });
});

describe('stateMayHoldResources: what row 1 reads of a deleting object with no success recorded', () => {
  const bare = snapshot();
  const withProviderID = snapshot({ spec: spec({ providerID: 'aws:///eu-west-1a/i-1' }) });
  it.each([
    ['resources', bare, true],
    ['encrypted', bare, true],
    ['unreadable', bare, true],
    ['no-resources', bare, false],
    ['missing', bare, false],
    ['unwritten', bare, false],
    // A state OpenTofu wrote without resources is never a lost one (a module may manage none).
    ['no-resources', withProviderID, false],
    // Lost while the object shows it was provisioned: a person decides (StateMissing), never a silent go.
    ['missing', withProviderID, true],
    ['unwritten', withProviderID, true],
  ] as const)('SR %s (providerID %s) → %s', (content, snap, expected) => {
    expect(stateMayHoldResources(content, snap, snap.status)).toBe(expected);
  });
  it('SR status.ready shows a provisioned object too', () => {
    const ready = snapshot({ status: { ready: true } });
    expect(stateMayHoldResources('missing', ready, ready.status)).toBe(true);
  });
});

describe('an encrypted state (issue 25 item 3): written by OpenTofu, its resources unknown', () => {
  const deleting = (status: Snapshot['status'] = {}) =>
    snapshot({ meta: { ...snapshot().meta, deletionTimestamp: iso(0) }, status });

  it('SE1 a deleting object that records no apply destroys an encrypted state (it may hold resources)', () => {
    const planned = plan(planFacts(deleting(), { state: 'encrypted' }));
    expect(planned.move.kind === 'start' && planned.move.start.op).toBe('destroy');
  });
  it('SE2 after a successful destroy the encrypted state goes with the finalizer', () => {
    const destroyed = deleting({ lastSuccess: { apply: iso(-900), destroy: iso(-60) }, lastRun: undefined });
    expect(plan(planFacts(destroyed, { state: 'encrypted' })).move).toMatchObject({
      kind: 'finalizers',
      gone: true,
      state: { cleanup: { kind: 'delete' } },
    });
  });
  it('SE3 an encrypted state is never a lost one: a provisioned object applies from it', () => {
    const planned = plan(planFacts(provisioned(), { state: 'encrypted' }));
    expect(planned.move.kind === 'start' && planned.move.start.op).toBe('apply');
  });
});

describe('what a state Secret holds (the kubernetes backend: gzip JSON under tfstate)', () => {
  const secret = (tfstate: Buffer | string | undefined): { data: Record<string, string> } => ({
    data: tfstate === undefined ? {} : { tfstate: Buffer.from(tfstate).toString('base64') },
  });
  const state = (resources: unknown[]) => JSON.stringify({ version: 4, serial: 3, resources });
  const managed = { mode: 'managed', type: 'null_resource', name: 'a', instances: [{ attributes: {} }] };
  const rows: {
    id: string;
    name: string;
    secret: Parameters<typeof stateContentOf>[0];
    expected: StateContent;
  }[] = [
    { id: 'SC1', name: 'no Secret', secret: undefined, expected: 'missing' },
    {
      id: 'SC10',
      name: "OpenTofu's encrypted envelope (issue 25 item 3)",
      secret: secret(
        gzipSync(
          JSON.stringify({
            serial: 2,
            lineage: 'l',
            meta: { 'key_provider.pbkdf2.k_0123456789abcdef': 'e30=' },
            encrypted_data: 'AAAA',
            encryption_version: 'v0',
          }),
        ),
      ),
      expected: 'encrypted',
    },
    {
      id: 'SC2',
      name: 'the empty Secret the runner identity creates',
      secret: secret(undefined),
      expected: 'unwritten',
    },
    {
      id: 'SC3',
      name: 'a state without resources',
      secret: secret(gzipSync(state([]))),
      expected: 'no-resources',
    },
    {
      id: 'SC4',
      name: 'only data sources and resources without instances',
      secret: secret(
        gzipSync(
          state([
            { mode: 'data', instances: [{}] },
            { mode: 'managed', instances: [] },
          ]),
        ),
      ),
      expected: 'no-resources',
    },
    {
      id: 'SC5',
      name: 'a managed resource, gzip',
      secret: secret(gzipSync(state([managed]))),
      expected: 'resources',
    },
    {
      id: 'SC6',
      name: 'a managed resource, plain JSON',
      secret: secret(state([managed])),
      expected: 'resources',
    },
    { id: 'SC7', name: 'not JSON', secret: secret(gzipSync('{{')), expected: 'unreadable' },
    {
      id: 'SC8',
      name: 'truncated gzip',
      secret: secret(gzipSync(state([managed])).subarray(0, 12)),
      expected: 'unreadable',
    },
  ];
  it.each(rows)('$id $name → $expected', (row) => {
    expect(stateContentOf(row.secret)).toBe(row.expected);
  });
  it('SC9 a gzip bomb stops at the bound and is unreadable, not a crash', () => {
    const bomb = gzipSync(Buffer.alloc(80 * 1024 * 1024, 0x20));
    expect(stateContentOf(secret(bomb))).toBe('unreadable');
  });
});
