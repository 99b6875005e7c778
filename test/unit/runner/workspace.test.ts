import { describe, expect, it } from 'vitest';
import { backendConfigText, hclString } from '../../../src/runner/workspace.ts';

describe('generated backend config (HCL)', () => {
  it.each([
    { id: 'plain', value: 'default', hcl: '"default"' },
    { id: 'quotes and backslashes', value: 'a"b\\c', hcl: '"a\\"b\\\\c"' },
    { id: 'newline and control', value: 'a\nb\u0001', hcl: '"a\\nb\\u0001"' },
    // biome-ignore lint/suspicious/noTemplateCurlyInString: an HCL template in a value, not a JS one
    { id: 'templates stay literal', value: '${var.x}%{if}', hcl: '"$${var.x}%%{if}"' },
  ])('$id', ({ value, hcl }) => {
    expect(hclString(value)).toBe(hcl);
  });

  it('writes the kubernetes backend labels as one HCL object (the clusterctl move label of a Cluster API object)', () => {
    expect(backendConfigText({ secret_suffix: 'm-a' }, { 'clusterctl.cluster.x-k8s.io/move': '' })).toBe(
      'secret_suffix = "m-a"\nlabels = { "clusterctl.cluster.x-k8s.io/move" = "" }\n',
    );
    expect(backendConfigText({ secret_suffix: 'm-a' }, {})).toBe('secret_suffix = "m-a"\n');
  });

  it('writes one attribute per key, scalars as literals', () => {
    expect(backendConfigText({ namespace: 'team-a', in_cluster_config: true, port: 6443 })).toBe(
      'namespace = "team-a"\nin_cluster_config = true\nport = 6443\n',
    );
  });
});
