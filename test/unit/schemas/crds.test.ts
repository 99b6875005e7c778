import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildCrd, crdFileName } from '../../../src/schemas/kinds/crd.ts';
import { crdYaml } from '../../../src/schemas/kinds/crd-yaml.ts';
import { KIND_DEFINITIONS } from '../../../src/schemas/kinds/registry.ts';
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
    '$kind: structural, with status subresource and printer columns',
    ({ definition }) => {
      const crd = buildCrd(definition);
      const [version] = crd.spec.versions as {
        subresources: object;
        additionalPrinterColumns: { name: string }[];
        schema: { openAPIV3Schema: Node };
      }[];
      expect(version?.subresources).toEqual({ status: {} });
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
      if (definition.kind !== 'TerraformPlan')
        expect(names.slice(0, 5)).toEqual(['Ready', 'Op', 'Reason', 'Waiting', 'Age']);
    },
  );

  it('the cross-field rules reach the API server as CEL', () => {
    const text = readFileSync(join(dir, 'infrastructure.cluster.x-k8s.io_terraformmachines.yaml'), 'utf8');
    expect(text).toContain('self.lockTimeoutSeconds < self.activeDeadlineSeconds');
    expect(text).toContain("!self.name.startsWith('TF_') && !self.name.startsWith('KUBE_')");
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
