import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { API_VERSION } from '../../../src/schemas/kinds/api-group.ts';
import { buildCrd } from '../../../src/schemas/kinds/crd.ts';
import { TEMPLATES } from '../../../src/schemas/kinds/registry.ts';
import {
  TerraformClusterTemplateSchema,
  TerraformClusterTemplateSpecSchema,
  TerraformMachinePoolTemplateSchema,
  TerraformMachinePoolTemplateSpecSchema,
  TerraformMachineTemplateSchema,
  TerraformMachineTemplateSpecSchema,
} from '../../../src/schemas/kinds/templates.ts';
import { TerraformClusterSpecSchema } from '../../../src/schemas/kinds/terraform-cluster.ts';
import { TerraformMachineSpecSchema } from '../../../src/schemas/kinds/terraform-machine.ts';
import { TerraformMachinePoolSpecSchema } from '../../../src/schemas/kinds/terraform-machine-pool.ts';

// The template kinds (issue 11): `spec.template.spec` is the cloned kind's own spec, so a template is
// refused for exactly what its clone would be refused for, with the same message; fields the controller
// writes per object are refused in a template.

function issues(result: z.ZodSafeParseResult<unknown>): string[] {
  return (result.error?.issues ?? []).map((i) => `${i.path.map(String).join('.')}: ${i.message}`);
}

type Node = { [key: string]: unknown };

/** The schema node at a path of property names. */
function at(node: Node | undefined, path: readonly string[]): Node | undefined {
  return path.reduce<Node | undefined>(
    (n, name) => (n?.properties as Record<string, Node> | undefined)?.[name],
    node,
  );
}

const source = { image: 'registry.example.com/modules/m:1' };

/** The three templates beside the kind each is cloned into. */
const pairs = [
  {
    kind: 'TerraformCluster',
    live: TerraformClusterSpecSchema,
    template: TerraformClusterTemplateSpecSchema,
  },
  {
    kind: 'TerraformMachine',
    live: TerraformMachineSpecSchema,
    template: TerraformMachineTemplateSpecSchema,
  },
  {
    kind: 'TerraformMachinePool',
    live: TerraformMachinePoolSpecSchema,
    template: TerraformMachinePoolTemplateSpecSchema,
  },
] as const;

const badSpecs = [
  {
    id: 'T01',
    name: 'a lock timeout not below the deadline',
    spec: { source, jobs: { activeDeadlineSeconds: 300, lockTimeoutSeconds: 300 } },
  },
  {
    id: 'T02',
    name: 'an env name starting TF_',
    spec: { source, jobs: { env: [{ name: 'TF_LOG', value: 'x' }] } },
  },
  {
    id: 'T03',
    name: 'a drift check with interval and schedule',
    spec: { source, driftCheck: { interval: '5m', schedule: '0 * * * *' } },
  },
  { id: 'T04', name: 'an unknown applyPolicy', spec: { source, applyPolicy: 'Sometimes' } },
  { id: 'T05', name: 'no module image', spec: {} },
  { id: 'T06', name: 'a deadline out of range', spec: { source, jobs: { activeDeadlineSeconds: 86_401 } } },
];

describe('template kinds: spec.template.spec is the cloned kind’s spec', () => {
  it.each(pairs.flatMap((pair) => badSpecs.map((bad) => ({ ...bad, ...pair }))))(
    '$id $kind: a template with $name is refused with the message its clone gets',
    ({ live, template, spec }) => {
      const cloned = issues(live.safeParse(spec));
      expect(cloned).not.toEqual([]);
      expect(issues(template.safeParse({ template: { spec } }))).toEqual(
        cloned.map((issue) => `template.spec.${issue}`),
      );
    },
  );

  it.each(pairs)('T10 $kind: a valid template keeps the clone’s defaults', ({ live, template }) => {
    const parsed = template.parse({ template: { spec: { source } } });
    expect(parsed.template.spec).toEqual(live.parse({ source }));
  });

  it.each([
    { kind: 'TerraformClusterTemplate', schema: TerraformClusterTemplateSchema },
    { kind: 'TerraformMachineTemplate', schema: TerraformMachineTemplateSchema },
    { kind: 'TerraformMachinePoolTemplate', schema: TerraformMachinePoolTemplateSchema },
  ])(
    'T11 a $kind with labels and annotations for its clones validates; its name is not a label value',
    ({ kind, schema }) => {
      const parsed = schema.safeParse({
        apiVersion: API_VERSION,
        kind,
        // Only the clones' names become captf.io/owner-name; a template's may be longer than 63.
        metadata: { name: 't'.repeat(100), namespace: 'team-a' },
        spec: {
          template: {
            metadata: { labels: { tier: 'workers' }, annotations: { 'example.com/owner': 'team-a' } },
            spec: { source, variables: { size: 'small' } },
          },
        },
      });
      expect(issues(parsed)).toEqual([]);
    },
  );

  it('T12 the template is required, and so is its spec', () => {
    expect(issues(TerraformMachineTemplateSpecSchema.safeParse({}))).toEqual([
      'template: Invalid input: expected object, received undefined',
    ]);
    expect(issues(TerraformMachineTemplateSpecSchema.safeParse({ template: { metadata: {} } }))).toEqual([
      'template.spec: Invalid input: expected object, received undefined',
    ]);
  });
});

describe('template kinds: fields the controller writes on each clone are refused', () => {
  const rows = [
    {
      id: 'T20',
      kind: 'TerraformMachineTemplate',
      field: 'providerID',
      live: TerraformMachineSpecSchema,
      template: TerraformMachineTemplateSpecSchema,
      value: 'captf://m-a',
    },
    {
      id: 'T21',
      kind: 'TerraformMachinePoolTemplate',
      field: 'providerIDList',
      live: TerraformMachinePoolSpecSchema,
      template: TerraformMachinePoolTemplateSpecSchema,
      value: ['captf://p-0'],
    },
    {
      id: 'T22',
      kind: 'TerraformClusterTemplate',
      field: 'controlPlaneEndpoint',
      live: TerraformClusterSpecSchema,
      template: TerraformClusterTemplateSpecSchema,
      value: { host: '10.0.0.1', port: 6443 },
    },
  ] as const;

  it.each(rows)(
    '$id $field: allowed on the live object, refused in its template',
    ({ field, live, template, value }) => {
      const spec = { source, [field]: value };
      expect(issues(live.safeParse(spec))).toEqual([]);
      expect(issues(template.safeParse({ template: { spec } }))).toEqual([
        `template.spec.${field}: ${field} cannot be set in a template: the controller writes it on each object cloned from the template, from the module output ${field}; remove it`,
      ]);
    },
  );

  it.each(rows)(
    '$id $field: the API server gets the same rule as CEL on spec.template.spec',
    ({ field, kind }) => {
      const [version] = buildCrd(TEMPLATES[kind]).spec.versions as { schema: { openAPIV3Schema: Node } }[];
      const cloned = at(version?.schema.openAPIV3Schema, ['spec', 'template', 'spec']);
      expect(cloned?.['x-kubernetes-validations']).toEqual([
        expect.objectContaining({ rule: `!has(self.${field})`, fieldPath: `.${field}` }),
        expect.objectContaining({ rule: '!has(self.outputs)', fieldPath: '.outputs' }),
      ]);
      expect(at(cloned, ['source', 'image'])?.type).toBe('string');
    },
  );

  it.each(rows)(
    '$id spec.outputs: allowed on the live object, refused in its template (every clone would name one Secret)',
    ({ live, template }) => {
      const spec = { source, outputs: { secretName: 'demo-outputs' } };
      expect(issues(live.safeParse(spec))).toEqual([]);
      expect(issues(template.safeParse({ template: { spec } }))).toEqual([
        'template.spec.outputs: outputs cannot be set in a template: every object cloned from it would name the same Secret, which only one of them can own; set outputs.secretName on each object instead',
      ]);
    },
  );
});

describe('spec.outputs.secretName', () => {
  it.each([
    ['tfstate-default-m-a', 'outputs.secretName may not start with tfstate- or captf-'],
    ['captf-plan-key-m-a', 'outputs.secretName may not start with tfstate- or captf-'],
    ['Not_A_Name', 'a Secret name'],
  ])('refuses %s', (secretName, message) => {
    const found = issues(TerraformMachineSpecSchema.safeParse({ source, outputs: { secretName } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
  });

  it('admits a Secret name of the object’s choosing', () => {
    expect(
      issues(TerraformMachineSpecSchema.safeParse({ source, outputs: { secretName: 'm-a.outputs' } })),
    ).toEqual([]);
  });
});
