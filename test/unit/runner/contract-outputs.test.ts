import { describe, expect, it } from 'vitest';
import { readContractOutputs } from '../../../src/runner/contract-outputs.ts';

describe('Cluster API contract outputs', () => {
  it('picks the contract outputs by name and ignores everything else', () => {
    const read = readContractOutputs({
      controlPlaneEndpoint: { sensitive: false, value: { host: 'cp.example', port: 6443 } },
      providerID: { sensitive: false, value: 'aws:///i-1' },
      replicas: { sensitive: false, value: 3 },
      kubeconfig: { sensitive: false, value: 'apiVersion: v1' },
    });
    expect(read).toEqual({
      outputs: {
        controlPlaneEndpoint: { host: 'cp.example', port: 6443 },
        providerID: 'aws:///i-1',
        replicas: 3,
      },
      rejected: [],
    });
  });

  it('skips sensitive outputs and rejects wrong shapes by name', () => {
    const read = readContractOutputs({
      providerID: { sensitive: true },
      replicas: { sensitive: false, value: -1 },
      addresses: { sensitive: false, value: ['10.0.0.1'] },
    });
    expect(read).toEqual({ outputs: {}, rejected: ['addresses', 'replicas'] });
  });

  it('no outputs message, no outputs', () => {
    expect(readContractOutputs(undefined)).toEqual({ outputs: {}, rejected: [] });
  });
});
