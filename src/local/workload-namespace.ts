import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kubectl } from './kubectl.ts';

/**
 * A namespace that holds TerraformCluster/Machine objects in the local run: the runner's least-privilege
 * RBAC (infra/rbac/runner.yaml) and the Terraform `kubernetes` backend credentials of that service account.
 *
 * Why a credentials Secret: the backend's default is `in_cluster_config`, which reads the service account
 * token from a fixed path compiled into OpenTofu; the local node runs containers as host processes with
 * no mount namespace (infra/local/images/README.md), so that path does not exist. The objects name this
 * Secret in `spec.backend.secretRef`, as an installation whose runners reach the state through explicit
 * credentials does; its keys become `-backend-config` values (src/core/run-secret-manifest.ts).
 */

/** The backend credentials Secret the local samples reference. */
export const LOCAL_BACKEND_SECRET = 'captf-local-backend';

/** The runner's service account in infra/rbac/runner.yaml. */
const RUNNER_SERVICE_ACCOUNT = 'captf-runner';

/** The Role that lets people approve plans in the local run (the admission policy checks the name). */
const PLAN_APPROVER_ROLE = 'captf-plan-approver';

/** A kubeconfig path that exists neither on the host nor in any image (see the Secret below). */
const NO_KUBECONFIG_FILE = '/nonexistent/captf-static-credentials';

/** Lifetime of the backend token; a local run lasts hours at most. */
const TOKEN_DURATION = '24h';

/**
 * The workload namespace enforces the `restricted` Pod Security Standard, as a hardened team namespace does:
 * the local run and the end-to-end tests show the Jobs pass it (issue 16).
 */
export const RESTRICTED_POD_SECURITY = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
};

/** What the backend needs to reach the API server. */
export interface BackendTarget {
  apiServerUrl: string;
  /** PEM file of the API server's serving certificate. */
  caPath: string;
}

/**
 * Creates (or updates) `namespace`, enforcing Pod Security `restricted`, with the runner RBAC and the backend
 * Secret. Idempotent: a second call refreshes the token. Throws with kubectl's message on failure. The
 * token never reaches a log.
 */
export async function prepareWorkloadNamespace(
  kubectl: Kubectl,
  repoRoot: string,
  namespace: string,
  target: BackendTarget,
): Promise<void> {
  const namespaceManifest = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace, labels: RESTRICTED_POD_SECURITY },
  };
  await kubectl.run(['apply', '-f', '-'], JSON.stringify(namespaceManifest));
  await kubectl.run(['apply', '-n', namespace, '-f', join(repoRoot, 'infra', 'rbac', 'runner.yaml')]);
  // Every pod's service account volume projects this ConfigMap; the local kube-controller-manager does not
  // run root-ca-cert-publisher, so without it pods would stay in ContainerCreating (FailedMount).
  const rootCa = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kube-root-ca.crt', namespace },
    data: { 'ca.crt': readFileSync(target.caPath, 'utf8') },
  };
  await kubectl.run(['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify(rootCa));
  const token = (
    await kubectl.run([
      'create',
      'token',
      RUNNER_SERVICE_ACCOUNT,
      '-n',
      namespace,
      `--duration=${TOKEN_DURATION}`,
    ])
  ).trim();
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: { name: LOCAL_BACKEND_SECRET, namespace },
    stringData: {
      in_cluster_config: 'false',
      // OpenTofu 1.12's kubernetes backend (tryLoadingConfigFile) fails with "no configuration has been
      // provided" when no kubeconfig file is named; a named file that does not exist makes it fall through
      // to the static host/token/CA below.
      config_path: NO_KUBECONFIG_FILE,
      host: target.apiServerUrl,
      token,
      cluster_ca_certificate: readFileSync(target.caPath, 'utf8'),
    },
  };
  // Server-side apply: a client-side apply would copy the token into the last-applied annotation.
  await kubectl.run(['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify(secret));
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
