import { readFileSync } from 'node:fs';
import type { Kubectl } from './kubectl.ts';

/**
 * A namespace that holds TerraformCluster/Machine objects in the local run. It needs nothing for the runner:
 * the controller gives each object its own runner identity (src/core/runner-identity.ts), and the runner
 * reaches the state with that account's token through its loopback proxy (src/runner/kube-proxy.ts), as in
 * a cluster.
 */

/** The Role that lets people approve plans in the local run (the admission policy checks the name). */
const PLAN_APPROVER_ROLE = 'captf-plan-approver';

/**
 * The workload namespace enforces the `restricted` Pod Security Standard, as a hardened team namespace does:
 * the local run and the end-to-end tests show the Jobs pass it (issue 16).
 */
export const RESTRICTED_POD_SECURITY = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
};

/** What the namespace's pods need to trust the API server. */
export interface BackendTarget {
  /** PEM file of the API server's serving certificate. */
  caPath: string;
}

/**
 * Creates (or updates) `namespace`, enforcing Pod Security `restricted`, with the cluster CA every pod's
 * service account volume projects. Idempotent. Throws with kubectl's message on failure.
 */
export async function prepareWorkloadNamespace(
  kubectl: Kubectl,
  namespace: string,
  target: BackendTarget,
): Promise<void> {
  const namespaceManifest = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace, labels: RESTRICTED_POD_SECURITY },
  };
  await kubectl.run(['apply', '-f', '-'], JSON.stringify(namespaceManifest));
  // Every pod's service account volume projects this ConfigMap; the local kube-controller-manager does not
  // run root-ca-cert-publisher, so without it pods would stay in ContainerCreating (FailedMount).
  const rootCa = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kube-root-ca.crt', namespace },
    data: { 'ca.crt': readFileSync(target.caPath, 'utf8') },
  };
  await kubectl.run(['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify(rootCa));
}

/**
 * Lets every authenticated user read our objects and approve TerraformPlans in `namespace` (local run
 * only: `kubectl --as=<user>` then acts as a person would). Who may approve is still narrowed by the
 * ValidatingAdmissionPolicy: `spec.approvedBy` must be the requesting user (DESIGN.md section 11).
 */
export async function grantPlanApprovers(kubectl: Kubectl, namespace: string): Promise<void> {
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: PLAN_APPROVER_ROLE, namespace },
    rules: [
      {
        apiGroups: ['infrastructure.cluster.x-k8s.io'],
        resources: ['terraformplans'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      {
        apiGroups: ['infrastructure.cluster.x-k8s.io'],
        resources: ['terraformclusters', 'terraformmachines', 'terraformmachinepools'],
        verbs: ['get', 'list', 'watch'],
      },
    ],
  };
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: PLAN_APPROVER_ROLE, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: PLAN_APPROVER_ROLE },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
  };
  await kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [role, binding] }),
  );
}
