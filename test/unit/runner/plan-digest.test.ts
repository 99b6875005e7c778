import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.ts';
import {
  movesLatchedOutput,
  type PlannedChange,
  planDigest,
  readPlanDocument,
  summarizePlan,
} from '../../../src/runner/plan-digest.ts';

const KEY = 'unit-test-key-0123456789abcdef0123';

function change(address: string, actions: string[], after: unknown = { input: address }): PlannedChange {
  return { address, actions, change: { actions, before: null, after } as never };
}

function planJson(changes: unknown[]): string {
  return JSON.stringify({ format_version: '1.2', resource_changes: changes });
}

describe('plan digest (DESIGN.md section 11)', () => {
  it('is SHA-256 over sorted lines address|actions|HMAC(key, canonical change)', () => {
    const a = change('terraform_data.a', ['create']);
    const b = change('terraform_data.b', ['delete', 'create']);
    const mac = (c: PlannedChange) => createHmac('sha256', KEY).update(canonicalJson(c.change)).digest('hex');
    const lines = [`terraform_data.a|create|${mac(a)}\n`, `terraform_data.b|delete,create|${mac(b)}\n`];
    const expected = `sha256:${createHash('sha256').update(lines.join('')).digest('hex')}`;
    expect(planDigest([b, a], KEY)).toBe(expected);
  });

  it('does not depend on the order of changes or of object keys', () => {
    const one = [change('x.a', ['update'], { p: 1, q: { r: 2, s: 3 } }), change('x.b', ['create'])];
    const two = [change('x.b', ['create']), change('x.a', ['update'], { q: { s: 3, r: 2 }, p: 1 })];
    expect(planDigest(one, KEY)).toBe(planDigest(two, KEY));
  });

  it('changes with the key, a planned value, an action or an address', () => {
    const base = planDigest([change('x.a', ['update'], { p: 1 })], KEY);
    expect(planDigest([change('x.a', ['update'], { p: 1 })], `${KEY}x`)).not.toBe(base);
    expect(planDigest([change('x.a', ['update'], { p: 2 })], KEY)).not.toBe(base);
    expect(planDigest([change('x.a', ['delete', 'create'], { p: 1 })], KEY)).not.toBe(base);
    expect(planDigest([change('x.b', ['update'], { p: 1 })], KEY)).not.toBe(base);
  });
});

describe('reading a plan document', () => {
  it('drops no-op and read changes and keeps deposed objects apart', () => {
    const parsed = readPlanDocument(
      planJson([
        { address: 'x.a', change: { actions: ['no-op'] } },
        { address: 'data.x.d', change: { actions: ['read'] } },
        { address: 'x.b', change: { actions: ['create'] } },
        { address: 'x.c', deposed: '00000001', change: { actions: ['delete'] } },
      ]),
    );
    expect(parsed.ok && parsed.changes.map((c) => c.address)).toEqual(['x.b', 'x.c (deposed 00000001)']);
  });

  it('finds the document after OpenTofu warning text on stdout', () => {
    const stdout = `\nWarning: Unable to open CLI configuration file\n\n${planJson([{ address: 'x.a', change: { actions: ['create'] } }])}`;
    const parsed = readPlanDocument(stdout);
    expect(parsed.ok && parsed.changes.length).toBe(1);
  });

  it.each([
    { id: 'not-json', text: 'Error: no plan', message: 'read plan: show -json printed no JSON object' },
    { id: 'bad-list', text: '{"resource_changes":{}}', message: 'read plan: resource_changes is not a list' },
    {
      id: 'no-actions',
      text: planJson([{ address: 'x.a', change: {} }]),
      message: 'read plan: x.a: actions missing',
    },
  ])('$id: an unreadable plan is a value with a message, never a throw', ({ text, message }) => {
    expect(readPlanDocument(text)).toEqual({ ok: false, message });
  });

  it('a plan without resource_changes has no changes', () => {
    expect(readPlanDocument('{"format_version":"1.2"}')).toEqual({
      ok: true,
      changes: [],
      plannedOutputs: {},
    });
  });

  it('names the root outputs the plan changes (a replaced server changes its providerID), not the no-ops', () => {
    const doc = {
      resource_changes: [],
      output_changes: {
        providerID: { actions: ['update'], before: 'captf-local://m-a/1', after_unknown: true },
        addresses: { actions: ['no-op'] },
        name: { actions: ['create'], after: 'n', after_unknown: false },
        endpoint: { actions: ['create'], after: { host: 'h', port: 0 }, after_unknown: { port: true } },
      },
    };
    expect(readPlanDocument(JSON.stringify(doc))).toEqual({
      ok: true,
      changes: [],
      plannedOutputs: {
        providerID: { known: false },
        name: { known: true, after: 'n' },
        endpoint: { known: false },
      },
    });
  });

  const latched = { host: '10.0.0.1', port: 6443 };
  const planWith = (change: Record<string, unknown> | undefined) => {
    const parsed = readPlanDocument(
      JSON.stringify({ output_changes: change ? { controlPlaneEndpoint: change } : {} }),
    );
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed;
  };
  it.each([
    { id: 'unchanged', change: undefined, moves: false },
    { id: 'no-op', change: { actions: ['no-op'], after: { host: 'x', port: 1 } }, moves: false },
    {
      id: 'created with the recorded value (set by a person before the first apply)',
      change: { actions: ['create'], after: { port: 6443, host: '10.0.0.1' }, after_unknown: false },
      moves: false,
    },
    {
      id: 'updated to another value',
      change: { actions: ['update'], after: { host: '10.0.0.2', port: 6443 }, after_unknown: false },
      moves: true,
    },
    {
      id: 'computed at apply',
      change: { actions: ['update'], after: { port: 6443 }, after_unknown: { host: true } },
      moves: true,
    },
    {
      id: 'the port as text (never guessed equal)',
      change: { actions: ['create'], after: { host: '10.0.0.1', port: '6443' }, after_unknown: false },
      moves: true,
    },
  ])('a latched output: $id → moves $moves', ({ change, moves }) => {
    expect(movesLatchedOutput(planWith(change), 'controlPlaneEndpoint', latched)).toBe(moves);
  });
});

describe('plan summary', () => {
  it('counts like Terraform (a replace is one add and one destroy) and flags deletes and replaces', () => {
    const summary = summarizePlan(
      [
        change('x.a', ['create']),
        change('x.b', ['update']),
        change('x.c', ['create', 'delete']),
        change('x.d', ['delete']),
      ],
      KEY,
    );
    expect(summary).toMatchObject({ add: 2, change: 1, destroy: 2, destructive: true });
  });

  it('an update-only plan is not destructive', () => {
    expect(summarizePlan([change('x.b', ['update'])], KEY).destructive).toBe(false);
  });
});
