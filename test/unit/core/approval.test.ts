import { describe, expect, it } from 'vitest';
import { planSituation } from '../../../src/core/approval.ts';
import { comparePlanDigest } from '../../../src/core/digest.ts';
import { buildPlanManifest, planRequester } from '../../../src/core/plan-manifest.ts';
import type { TerraformPlan } from '../../../src/schemas/kinds/terraform-plan.ts';
import { TerraformPlanSchema } from '../../../src/schemas/kinds/terraform-plan.ts';

const target = {
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
  kind: 'TerraformMachine',
  name: 'm-a',
  namespace: 'team-a',
  uid: 'uid-1',
} as const;

function plan(
  name: string,
  inputsHash: string,
  digest: string,
  extra: { approved?: boolean; phase?: 'Pending' | 'Superseded' | 'Applied'; created?: string } = {},
): TerraformPlan {
  const manifest = buildPlanManifest({
    target,
    job: name,
    inputsHash,
    plan: { digest, add: 0, change: 1, destroy: 0 },
    labels: {},
  });
  return {
    ...manifest,
    metadata: { ...manifest.metadata, creationTimestamp: extra.created ?? '2026-11-29T12:00:00Z' },
    spec: {
      ...manifest.spec,
      approved: extra.approved ?? false,
      ...(extra.approved ? { approvedBy: 'alice' } : {}),
    },
    ...(extra.phase ? { status: { phase: extra.phase } } : {}),
  };
}

describe('comparePlanDigest: DESIGN.md section 11', () => {
  it.each([
    {
      id: 'S11.1',
      name: 'same digest → apply the saved plan',
      expected: 'sha256:d1',
      actual: 'sha256:d1',
      kind: 'same',
    },
    {
      id: 'S11.2',
      name: 'different digest → apply nothing (plan-changed)',
      expected: 'sha256:d1',
      actual: 'sha256:d2',
      kind: 'changed',
    },
    {
      id: 'S11.3',
      name: 'no approved plan → no expectation',
      expected: undefined,
      actual: 'sha256:d2',
      kind: 'no-expectation',
    },
  ])('$id $name', ({ expected, actual, kind }) => {
    expect(comparePlanDigest(expected, actual).kind).toBe(kind);
  });
});

describe('planSituation: DESIGN.md section 11', () => {
  it('no plan → none', () => {
    expect(planSituation([], 'uid-1', 'h1')).toEqual({ approval: 'none', supersede: [] });
  });

  it('a pending plan for the current inputs → pending', () => {
    expect(planSituation([plan('j1', 'h1', 'sha256:d1')], 'uid-1', 'h1')).toMatchObject({
      approval: 'pending',
      live: 'j1-plan',
    });
  });

  it('C19: approving d1 → approved with d1 (and nothing to supersede)', () => {
    const s = planSituation([plan('j1', 'h1', 'sha256:d1', { approved: true })], 'uid-1', 'h1');
    expect(s).toEqual({
      approval: 'approved',
      approved: { name: 'j1-plan', digest: 'sha256:d1' },
      live: 'j1-plan',
      supersede: [],
    });
  });

  it('C18: an approval does not carry over to new inputs; the old plan is superseded, the new one waits', () => {
    const old = plan('j1', 'h1', 'sha256:d1', { approved: true });
    const fresh = plan('j2', 'h2', 'sha256:d2', { created: '2026-11-29T12:10:00Z' });
    expect(planSituation([old], 'uid-1', 'h2')).toEqual({ approval: 'none', supersede: ['j1-plan'] });
    expect(planSituation([old, fresh], 'uid-1', 'h2')).toEqual({
      approval: 'pending',
      live: 'j2-plan',
      supersede: ['j1-plan'],
    });
  });

  it('applied and superseded plans are not live; other targets are ignored', () => {
    const plans = [
      plan('j1', 'h1', 'sha256:d1', { approved: true, phase: 'Applied' }),
      plan('j2', 'h1', 'sha256:d2', { phase: 'Superseded' }),
    ];
    expect(planSituation(plans, 'uid-1', 'h1')).toEqual({ approval: 'none', supersede: [] });
    expect(planSituation([plan('j3', 'h1', 'sha256:d3')], 'uid-other', 'h1')).toEqual({
      approval: 'none',
      supersede: [],
    });
  });
});

describe('buildPlanManifest', () => {
  it('builds a valid TerraformPlan owned by its target, unapproved', () => {
    const manifest = buildPlanManifest({
      target,
      job: 'captf-m-m-a-apply-a1-abcdef',
      inputsHash: 'h1',
      plan: { digest: 'sha256:d1', add: 0, change: 0, destroy: 3, destructive: true },
      labels: { 'captf.io/owner-uid': 'uid-1' },
    });
    expect(TerraformPlanSchema.safeParse(manifest).success).toBe(true);
    expect(manifest.metadata).toMatchObject({
      name: 'captf-m-m-a-apply-a1-abcdef-plan',
      ownerReferences: [{ uid: 'uid-1', kind: 'TerraformMachine' }],
    });
    expect(manifest.spec).toMatchObject({
      approved: false,
      destructive: true,
      destroy: 3,
      targetRef: { uid: 'uid-1' },
    });
  });
});

describe('planRequester: who last changed the spec (issue 24 item 5)', () => {
  const entry = (manager: string, time: string, fields: object, subresource?: string) => ({
    manager,
    operation: 'Update',
    time,
    fieldsType: 'FieldsV1',
    fieldsV1: fields,
    ...(subresource ? { subresource } : {}),
  });
  it('names the newest spec writer, past the controller and status writes', () => {
    const managedFields = [
      entry('kubectl-client-side-apply', '2026-01-01T00:00:00Z', { 'f:spec': {} }),
      entry('kubectl-edit', '2026-01-02T00:00:00Z', { 'f:spec': { 'f:variables': {} } }),
      entry('captf', '2026-01-03T00:00:00Z', { 'f:spec': { 'f:providerID': {} } }),
      entry('captf', '2026-01-04T00:00:00Z', { 'f:status': {} }, 'status'),
      entry('labeller', '2026-01-05T00:00:00Z', { 'f:metadata': {} }),
    ];
    expect(planRequester(managedFields, 4)).toEqual({
      generation: 4,
      manager: 'kubectl-edit',
      time: '2026-01-02T00:00:00Z',
    });
  });
  it('is the generation alone when nothing says who', () => {
    expect(planRequester(undefined, 2)).toEqual({ generation: 2 });
    expect(planRequester([null, 'x', { manager: 7 }], 2)).toEqual({ generation: 2 });
  });
  it('is accepted by the CRD schema with the readable plan', () => {
    const manifest = buildPlanManifest({
      target,
      job: 'j',
      inputsHash: 'h1',
      plan: { digest: 'sha256:d1', add: 1, change: 0, destroy: 1, destructive: true },
      labels: {},
      requestedBy: { generation: 3, manager: 'kubectl-edit' },
      changes: {
        resources: [{ address: 'terraform_data.m', action: 'replace', replacePaths: ['triggers_replace'] }],
        omittedResources: 0,
        destructive: ['terraform_data.m'],
        outputs: [],
        counts: { resources: 1, create: 0, update: 0, delete: 0, replace: 1, read: 0, forget: 0, outputs: 0 },
      },
    });
    expect(TerraformPlanSchema.safeParse(manifest).success).toBe(true);
    expect(manifest.spec.requestedBy).toEqual({ generation: 3, manager: 'kubectl-edit' });
    expect(manifest.spec.changes?.destructive).toEqual(['terraform_data.m']);
  });
});
