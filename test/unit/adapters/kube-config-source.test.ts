import { describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../src/adapters/kube/connection.ts';

// A kubeconfig given as content (CAPTF_KUBECONFIG_CONTENT on AWS Lambda) is loaded from memory.

const CONTENT = `apiVersion: v1
kind: Config
clusters:
- name: mgmt
  cluster:
    server: https://mgmt.example:6443
users:
- name: captf
  user:
    token: not-a-real-token
contexts:
- name: captf@mgmt
  context: { cluster: mgmt, user: captf }
current-context: captf@mgmt
`;

describe('loadKubeConfig from content', () => {
  it('reads the current cluster and user from the string', () => {
    const config = loadKubeConfig({ kind: 'content', content: CONTENT });
    expect(config.getCurrentCluster()?.server).toBe('https://mgmt.example:6443');
    expect(config.getCurrentUser()?.token).toBe('not-a-real-token');
  });

  it('content that names no current cluster is refused, as a file would be', () => {
    expect(() => loadKubeConfig({ kind: 'content', content: 'apiVersion: v1\nkind: Config\n' })).toThrow(
      'load kubeconfig: no current cluster',
    );
  });
});
