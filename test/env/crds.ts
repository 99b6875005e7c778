import { join } from 'node:path';
import { applyClusterResources } from '../../src/local/cluster-resources.ts';
import { kubectlFor } from '../../src/local/kubectl.ts';

const REPO_ROOT = join(import.meta.dirname, '..', '..');

/**
 * Installs what an installation installs once (src/local/cluster-resources.ts): the generated CRDs
 * (infra/crds, applied with kubectl, the one way tests install them: client-node's typed
 * ApiextensionsV1Api drops schema keys such as `enum`, `default`, `x-kubernetes-*`) and the admission
 * policies (infra/admission), waiting until the CRDs are Established and the run policy is enforced. Done
 * once before any test file runs: the run policy's param kind is a CRD, and for a few seconds after that
 * CRD is new every write of our kinds is refused, which must not land in the middle of another file's test.
 * Idempotent; throws with kubectl's stderr on failure.
 */
export async function applyCrds(stack: { kubectlPath: string; kubeconfigPath: string }): Promise<void> {
  try {
    await applyClusterResources(kubectlFor(stack.kubectlPath, stack.kubeconfigPath), REPO_ROOT);
  } catch (cause) {
    const stderr = (cause as { stderr?: string }).stderr ?? '';
    throw new Error(`install infra/crds and infra/admission: ${stderr || (cause as Error).message}`, {
      cause,
    });
  }
}
