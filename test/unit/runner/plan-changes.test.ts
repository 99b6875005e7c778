import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/core/redaction.ts';
import type { JsonValue } from '../../../src/runner/json.ts';
import { actionWord, changedPaths, maskAddress, readPlanChanges } from '../../../src/runner/plan-changes.ts';
import { configAddress, NO_SECRET_REACH, secretReach } from '../../../src/runner/secret-reach.ts';
import {
  PLAN_CHANGES_MAX_BYTES,
  PLAN_CHANGES_MAX_DESTRUCTIVE,
  type PlanChanges,
  PlanChangesSchema,
} from '../../../src/schemas/plan-changes.ts';

// The readable plan (issue 24 item 1) from a real `tofu show -json` (test/fixtures/plans/generate.sh):
// 300 nodes → 290 with a new label and generation, and every secret of the module changed.

const CANARY = 'tok-123-canary';
// What the run knows: the current values of its Secret-fed variables and bootstrap data. The values the
// state holds from the previous apply (`-one`, `-pw1`, `-boot1`) are not among them.
const redactor = createRedactor([`${CANARY}-two`, `${CANARY}-pw2`, `#cloud-config ${CANARY}-boot2`]);
const SECRET_VARIABLES = ['token', 'password', 'bootstrap_data'];
const LARGE: JsonValue = JSON.parse(
  gunzipSync(
    readFileSync(join(import.meta.dirname, '../../fixtures/plans/large-plan.show.json.gz')),
  ).toString(),
);

function read(doc: JsonValue, bound?: { maxResources: number; maxBytes: number }): PlanChanges {
  const result = readPlanChanges(doc, redactor, secretReach(doc, SECRET_VARIABLES), bound);
  if (!result.ok) throw new Error(result.message);
  return result.changes;
}

describe('readable plan from a real plan of 303 changes', () => {
  const changes = read(LARGE);

  it('counts every change by OpenTofu action word', () => {
    expect(changes.counts).toEqual({
      resources: 303,
      create: 1,
      update: 288,
      delete: 11,
      replace: 3,
      read: 0,
      forget: 0,
      outputs: 3,
    });
    expect(changes.resources).toHaveLength(303);
    expect(changes.omittedResources).toBe(0);
  });

  it('lists deletes and replaces first, then the rest in OpenTofu order', () => {
    const actions = changes.resources.map((r) => r.action);
    const firstOther = actions.findIndex((a) => a !== 'delete' && a !== 'replace');
    expect(firstOther).toBe(14);
    expect(actions.slice(firstOther).every((a) => a !== 'delete' && a !== 'replace')).toBe(true);
    expect(changes.destructive).toEqual(changes.resources.slice(0, 14).map((r) => r.address));
  });

  it('gives an update its changed paths and a replace its paths and replace_paths', () => {
    const node = (address: string) => changes.resources.find((r) => r.address === address);
    expect(node('terraform_data.node[5]')).toEqual({
      address: 'terraform_data.node[5]',
      action: 'update',
      paths: ['input.label', 'output'],
    });
    expect(node('terraform_data.node[0]')).toEqual({
      address: 'terraform_data.node[0]',
      action: 'replace',
      reason: 'replace_because_cannot_update',
      paths: ['id', 'input.label', 'output', 'triggers_replace[0]'],
      replacePaths: ['triggers_replace'],
    });
    expect(node('terraform_data.node[295]')).toEqual({
      address: 'terraform_data.node[295]',
      action: 'delete',
      reason: 'delete_because_count_index',
    });
  });

  it('names sensitive and Secret-fed attributes by path only, and masks a Secret-held key', () => {
    const secret = changes.resources.find((r) => r.address === 'terraform_data.secret');
    // `input` reads Secret-fed variables: its keys could be their values, so the path stops there.
    expect(secret?.paths).toEqual(['input', 'output']);
    // The deleted instance's key is the token's previous value, which the run no longer knows: masked by
    // reference (its for_each reads var.token); the created one by value too.
    const keyed = changes.resources.filter((r) => r.address.startsWith('terraform_data.keyed'));
    expect(keyed.map((r) => [r.address, r.action])).toEqual([
      ['terraform_data.keyed[(sensitive value)]', 'delete'],
      ['terraform_data.keyed[(sensitive value)]', 'create'],
    ]);
    expect(changes.outputs).toEqual([
      { name: 'nodes', action: 'update' },
      { name: 'password', action: 'update' },
      { name: 'token', action: 'update' },
    ]);
  });

  it('never holds a secret, a value or the canary anywhere', () => {
    const text = JSON.stringify(changes);
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain('cloud-config');
    expect(text).not.toContain('"b"');
    // The fixture does hold them: the absence is the transformation's.
    expect(JSON.stringify(LARGE)).toContain(`${CANARY}-one`);
  });

  it('without the reference rule, the previous Secret value shows in the deleted key (what the rule is for)', () => {
    const result = readPlanChanges(LARGE, redactor, NO_SECRET_REACH);
    if (!result.ok) throw new Error(result.message);
    expect(result.changes.destructive[0]).toBe(`terraform_data.keyed["${CANARY}-one"]`);
  });

  it('is what the CRD field accepts', () => {
    expect(PlanChangesSchema.safeParse(changes).success).toBe(true);
  });
});

describe('the bound keeps the first changes and exact counts', () => {
  it('stops at the resource limit', () => {
    const changes = read(LARGE, { maxResources: 50, maxBytes: PLAN_CHANGES_MAX_BYTES });
    expect(changes.resources).toHaveLength(50);
    expect(changes.omittedResources).toBe(253);
    expect(changes.counts.resources).toBe(303);
    // Every destructive change is still among the kept ones.
    expect(changes.resources.slice(0, 14).every((r) => r.action === 'delete' || r.action === 'replace')).toBe(
      true,
    );
  });

  it('stops before the byte limit, whatever the entries cost', () => {
    for (const maxBytes of [1024, 4096, 20_000]) {
      const changes = read(LARGE, { maxResources: 1000, maxBytes });
      expect(new TextEncoder().encode(JSON.stringify(changes)).length).toBeLessThanOrEqual(maxBytes);
      expect(changes.resources.length + changes.omittedResources).toBe(303);
      expect(changes.omittedResources).toBeGreaterThan(0);
    }
  });

  it('lists at most 20 destructive addresses', () => {
    const many = Array.from({ length: 30 }, (_, i) => ({
      address: `terraform_data.x[${i}]`,
      change: { actions: ['delete'], before: { input: i }, after: null },
    }));
    const changes = read({ resource_changes: many });
    expect(changes.destructive).toHaveLength(PLAN_CHANGES_MAX_DESTRUCTIVE);
    expect(changes.counts.delete).toBe(30);
  });
});

describe('paths, masks and action words', () => {
  it('uses OpenTofu words for every action list and skips no-op', () => {
    expect(actionWord(['create'])).toBe('create');
    expect(actionWord(['delete', 'create'])).toBe('replace');
    expect(actionWord(['create', 'delete'])).toBe('replace');
    expect(actionWord(['read'])).toBe('read');
    expect(actionWord(['forget'])).toBe('forget');
    expect(actionWord(['no-op'])).toBeUndefined();
  });

  it('stops at a sensitive attribute: a changed sensitive map shows no key', () => {
    const paths = changedPaths({
      before: { tags: { [`${CANARY}-key`]: 'a' }, name: 'x' },
      after: { tags: { [`${CANARY}-key`]: 'b' }, name: 'x' },
      unknown: {},
      beforeSensitive: { tags: true },
      afterSensitive: { tags: true },
    });
    expect(paths).toEqual([['tags']]);
  });

  it('reports an unchanged sensitive attribute not at all, an unknown one always', () => {
    const paths = changedPaths({
      before: { secret: 'same', id: 'i-1' },
      after: { secret: 'same' },
      unknown: { id: true },
      beforeSensitive: { secret: true },
      afterSensitive: { secret: true },
    });
    expect(paths).toEqual([['id']]);
  });

  it('masks a Secret-held map key inside a path and an instance key, keeps other keys', () => {
    const changes = read({
      resource_changes: [
        {
          address: `module.m["${CANARY}-two"].terraform_data.k["plain"]`,
          change: {
            actions: ['update'],
            before: { input: { [`${CANARY}-two`]: 1, 'with space': 1 } },
            after: { input: { [`${CANARY}-two`]: 2, 'with space': 2 } },
            after_unknown: {},
            before_sensitive: {},
            after_sensitive: {},
          },
        },
      ],
    });
    expect(changes.resources[0]).toEqual({
      address: 'module.m[(sensitive value)].terraform_data.k["plain"]',
      action: 'update',
      paths: ['input[(sensitive value)]', 'input["with space"]'],
    });
    expect(maskAddress('terraform_data.a["x\\"y"]', () => false)).toBe('terraform_data.a["x\\"y"]');
  });

  it('keeps a deposed object apart and counts outputs only when they change', () => {
    const changes = read({
      resource_changes: [
        { address: 'terraform_data.a', deposed: 'abcd1234', change: { actions: ['delete'] } },
        { address: 'terraform_data.b', change: { actions: ['no-op'] } },
      ],
      output_changes: { same: { actions: ['no-op'] }, gone: { actions: ['delete'] } },
    });
    expect(changes.resources).toEqual([{ address: 'terraform_data.a (deposed abcd1234)', action: 'delete' }]);
    expect(changes.outputs).toEqual([{ name: 'gone', action: 'delete' }]);
    expect(changes.counts.resources).toBe(1);
  });

  it('refuses a document that is not a plan, naming no value', () => {
    expect(readPlanChanges('x', redactor)).toEqual({
      ok: false,
      message: 'read plan changes: not a JSON object',
    });
    expect(readPlanChanges({ resource_changes: [{ address: CANARY }] }, redactor)).toEqual({
      ok: false,
      message: 'read plan changes: a resource change lacks address or change',
    });
  });
});

describe('where Secret-fed variables reach (src/runner/secret-reach.ts)', () => {
  const configuration = {
    root_module: {
      resources: [
        { address: 'terraform_data.plain', expressions: { input: { references: ['var.label'] } } },
        {
          address: 'terraform_data.keyed',
          for_each_expression: { references: ['var.token'] },
          expressions: { input: [{ nested: { references: ['var.token.id', 'var.token'] } }] },
        },
      ],
      module_calls: {
        child: {
          for_each_expression: { references: ['var.label'] },
          expressions: { key: { references: ['var.token'] }, other: { references: ['var.label'] } },
          module: {
            resources: [
              { address: 'data.x.y', for_each_expression: { references: ['var.key'] } },
              { address: 'terraform_data.z', for_each_expression: { references: ['var.other'] } },
            ],
          },
        },
        secret: { for_each_expression: { references: ['var.token'] }, module: {} },
      },
    },
  };

  it('follows for_each, nested expressions and module variables, not unrelated ones', () => {
    const reach = secretReach({ configuration }, ['token']);
    expect([...reach.keyed].sort()).toEqual([
      'module.child.data.x.y',
      'module.secret',
      'terraform_data.keyed',
    ]);
    expect([...reach.attributes.entries()].map(([k, v]) => [k, [...v]])).toEqual([
      ['terraform_data.keyed', ['input']],
    ]);
    expect(secretReach({ configuration }, [])).toBe(NO_SECRET_REACH);
    expect(secretReach({}, ['token'])).toBe(NO_SECRET_REACH);
  });

  it('masks every key of an address a Secret reaches, however deep', () => {
    const reach = secretReach({ configuration }, ['token']);
    const changes = readPlanChanges(
      {
        resource_changes: [
          {
            address: 'module.child["a"].data.x.y["old-secret-value"]',
            module_address: 'module.child["a"]',
            mode: 'data',
            type: 'x',
            name: 'y',
            change: { actions: ['read'] },
          },
          {
            address: 'module.child["a"].terraform_data.z["visible"]',
            module_address: 'module.child["a"]',
            mode: 'managed',
            type: 'terraform_data',
            name: 'z',
            change: { actions: ['create'] },
          },
        ],
      },
      redactor,
      reach,
    );
    if (!changes.ok) throw new Error(changes.message);
    expect(changes.changes.resources.map((r) => r.address)).toEqual([
      'module.child[(sensitive value)].data.x.y[(sensitive value)]',
      'module.child["a"].terraform_data.z["visible"]',
    ]);
  });

  it('names the configuration a change lives under', () => {
    expect(
      configAddress({
        module_address: 'module.a["x"].module.b[0]',
        mode: 'managed',
        type: 'aws_instance',
        name: 'web',
      }),
    ).toEqual(['module.a', 'module.a.module.b', 'module.a.module.b.aws_instance.web']);
  });
});
