import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { API_GROUP, TARGET_KINDS } from '../../../src/schemas/kinds/api-group.ts';
import { KINDS, TEMPLATE_KINDS, TEMPLATES } from '../../../src/schemas/kinds/registry.ts';

// infra/rbac/cluster-api.yaml against the registry: every kind Cluster API clones or reads has its rule,
// with the verbs of Cluster API's v1beta2 contracts, so a new kind without one fails here.

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const role = parse(
  readFileSync(join(import.meta.dirname, '..', '..', '..', 'infra', 'rbac', 'cluster-api.yaml'), 'utf8'),
) as { metadata: { labels: Record<string, string> }; rules: Rule[] };

/** The verbs the role grants on one resource of our group. */
function verbsOn(resource: string): string[] {
  return role.rules
    .filter((rule) => rule.apiGroups.includes(API_GROUP) && rule.resources.includes(resource))
    .flatMap((rule) => rule.verbs)
    .sort();
}

const ALL = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

describe('infra/rbac/cluster-api.yaml', () => {
  it('is aggregated into Cluster API’s manager role', () => {
    expect(role.metadata.labels).toEqual({ 'cluster.x-k8s.io/aggregate-to-manager': 'true' });
  });

  it.each([
    ...TARGET_KINDS.map((kind) => ({ kind, plural: KINDS[kind].plural, verbs: ALL })),
    ...TEMPLATE_KINDS.map((kind) => ({
      kind,
      plural: TEMPLATES[kind].plural,
      // ClusterClass clones cluster templates but never creates or deletes one (InfraCluster contract).
      verbs: kind === 'TerraformClusterTemplate' ? ALL.filter((v) => v !== 'create' && v !== 'delete') : ALL,
    })),
  ])('$kind: $verbs', ({ plural, verbs }) => {
    expect(verbsOn(plural)).toEqual(verbs);
  });

  it('grants nothing on TerraformPlans, subresources or other groups', () => {
    expect(verbsOn(KINDS.TerraformPlan.plural)).toEqual([]);
    const resources = role.rules.flatMap((rule) => rule.resources);
    expect(resources.filter((resource) => resource.includes('/'))).toEqual([]);
    expect(role.rules.flatMap((rule) => rule.apiGroups)).toEqual(role.rules.map(() => API_GROUP));
  });
});
