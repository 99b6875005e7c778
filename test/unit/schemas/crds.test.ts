import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildCrd, crdFileName } from '../../../src/schemas/kinds/crd.ts';
import { crdYaml } from '../../../src/schemas/kinds/crd-yaml.ts';
import { KIND_DEFINITIONS, POLICY_KINDS, TEMPLATE_KINDS } from '../../../src/schemas/kinds/registry.ts';
import { toStructuralSchema } from '../../../src/schemas/kinds/structural.ts';

const dir = join(import.meta.dirname, '..', '..', '..', 'infra', 'crds');

type Node = { [key: string]: unknown };

/** Every schema node with its path. */
function* walk(node: Node, path: string): Generator<[string, Node]> {
  yield [path, node];
  const properties = node.properties as Record<string, Node> | undefined;
  for (const [name, child] of Object.entries(properties ?? {})) yield* walk(child, `${path}.${name}`);
  if (node.items) yield* walk(node.items as Node, `${path}[]`);
  if (typeof node.additionalProperties === 'object')
    yield* walk(node.additionalProperties as Node, `${path}{}`);
}

describe('CRDs (infra/crds)', () => {
  it('the committed files are exactly what scripts/gen-crds.ts generates (run `npm run gen:crds`)', () => {
    expect(readdirSync(dir).sort()).toEqual(KIND_DEFINITIONS.map(crdFileName).sort());
    for (const definition of KIND_DEFINITIONS) {
      expect(readFileSync(join(dir, crdFileName(definition)), 'utf8'), crdFileName(definition)).toBe(
        crdYaml(buildCrd(definition)),
      );
    }
  });

  it.each(KIND_DEFINITIONS.map((d) => ({ kind: d.kind, definition: d })))(
    '$kind: structural, with status subresource (templates and policies: none) and printer columns',
    ({ definition }) => {
      const crd = buildCrd(definition);
      const [version] = crd.spec.versions as {
        subresources?: object;
        additionalPrinterColumns: { name: string }[];
        schema: { openAPIV3Schema: Node };
      }[];
      const template = (TEMPLATE_KINDS as readonly string[]).includes(definition.kind);
      // A run policy is written by a cluster admin and read by admission: nothing reports on it.
      const policy = (POLICY_KINDS as readonly string[]).includes(definition.kind);
      expect(version?.subresources).toEqual(template || policy ? undefined : { status: {} });
      expect(Object.keys(version?.schema.openAPIV3Schema.properties as object)).toEqual(
        template || policy
          ? ['apiVersion', 'kind', 'metadata', 'spec']
          : ['apiVersion', 'kind', 'metadata', 'spec', 'status'],
      );
      for (const [path, node] of walk(version?.schema.openAPIV3Schema ?? {}, '')) {
        const free =
          node['x-kubernetes-preserve-unknown-fields'] === true ||
          node['x-kubernetes-int-or-string'] === true;
        expect(free || typeof node.type === 'string', `${path} has a type`).toBe(true);
        if (node.anyOf)
          expect(node['x-kubernetes-int-or-string'], `${path}: anyOf only for int-or-string`).toBe(true);
        expect(node).not.toHaveProperty('$ref');
        expect(node).not.toHaveProperty('propertyNames');
        expect(node.additionalProperties, `${path}: additionalProperties false is refused`).not.toBe(false);
      }
      const names = version?.additionalPrinterColumns.map((c) => c.name) ?? [];
      if (template) expect(names).toEqual(['Image', 'Age']);
      else if (policy) expect(names).toEqual(['Images', 'Service Accounts', 'Age']);
      else if (definition.kind !== 'TerraformPlan')
        expect(names.slice(0, 5)).toEqual(['Ready', 'Op', 'Reason', 'Waiting', 'Age']);
    },
  );

  it.each(KIND_DEFINITIONS.map((d) => ({ kind: d.kind, definition: d })))(
    '$kind: namespaced, with the Cluster API contract label, clusterctl provider and move labels and cluster-api category',
    ({ definition }) => {
      const crd = buildCrd(definition);
      expect(crd.metadata.labels).toEqual({
        'cluster.x-k8s.io/provider': 'infrastructure-terraform',
        'clusterctl.cluster.x-k8s.io': '',
        'cluster.x-k8s.io/v1beta1': 'v1alpha1',
        'cluster.x-k8s.io/v1beta2': 'v1alpha1',
      });
      expect(crd.spec).toMatchObject({
        scope: 'Namespaced',
        names: { listKind: `${definition.kind}List`, categories: expect.arrayContaining(['cluster-api']) },
      });
    },
  );

  it('each template kind is its cloned kind + Template (Cluster API finds the clone by trimming the suffix)', () => {
    const kinds = KIND_DEFINITIONS.map((d) => d.kind);
    for (const template of TEMPLATE_KINDS) expect(kinds).toContain(template.replace(/Template$/, ''));
  });

  it('the cross-field rules reach the API server as CEL', () => {
    const text = readFileSync(join(dir, 'infrastructure.cluster.x-k8s.io_terraformmachines.yaml'), 'utf8');
    expect(text).toContain('self.lockTimeoutSeconds < self.activeDeadlineSeconds');
    expect(text).toContain(
      "!self.name.startsWith('KUBE_') && (!self.name.startsWith('TF_') || self.name.matches('^TF_TOKEN_[A-Za-z0-9_-]+$'))",
    );
    expect(text).toContain("!self.name.startsWith('TF_TOKEN_') || (!has(self.value) && has(self.valueFrom)");
    expect(text).toContain('x-kubernetes-preserve-unknown-fields: true');
    expect(text).toContain('x-kubernetes-int-or-string: true');
    const plans = readFileSync(join(dir, 'infrastructure.cluster.x-k8s.io_terraformplans.yaml'), 'utf8');
    expect(plans).toContain('self || !oldSelf');
  });

  it('the conversion refuses what a structural schema cannot say, naming the path', () => {
    expect(() => toStructuralSchema(z.object({ a: z.union([z.string(), z.boolean()]) }), 'spec')).toThrow(
      /spec\.a: unions and references/,
    );
    expect(() => toStructuralSchema(z.object({ a: z.unknown() }), 'spec')).toThrow(
      /spec\.a: every node needs a type/,
    );
  });
});
