import { readFileSync } from 'node:fs';
import { testStack } from '../env/index.ts';

/** Cluster API's API group. */
export const CAPI_GROUP = 'cluster.x-k8s.io';

/**
 * The `<cluster>-kubeconfig` Secret Cluster API reads the workload cluster from (its ClusterCache; the
 * MachinePool controller and the Machine's nodeRef need it): the test stack's API server itself, with its CA
 * embedded, so the workload cluster's Nodes are the stack's.
 */
export function workloadKubeconfigSecret(cluster: string, namespace: string): Record<string, unknown> {
  const stack = testStack();
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: cluster,
        cluster: {
          server: stack.apiServerUrl,
          'certificate-authority-data': readFileSync(stack.caPath).toString('base64'),
        },
      },
    ],
    users: [{ name: 'admin', user: { token: stack.adminToken } }],
    contexts: [{ name: cluster, context: { cluster, user: 'admin' } }],
    'current-context': cluster,
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: `${CAPI_GROUP}/secret`,
    metadata: {
      name: `${cluster}-kubeconfig`,
      namespace,
      labels: { [`${CAPI_GROUP}/cluster-name`]: cluster },
    },
    data: { value: Buffer.from(JSON.stringify(kubeconfig)).toString('base64') },
  };
}
