import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CRD_DIR = join(import.meta.dirname, '..', '..', 'infra', 'crds');

/**
 * Applies the generated CRDs (infra/crds) with kubectl and waits until each is Established. The one way
 * tests install CRDs: client-node's typed ApiextensionsV1Api drops schema keys it has other names for
 * (`enum`, `default`, `x-kubernetes-*`), which would leave the API server without our validation and
 * defaulting. Idempotent; throws with kubectl's stderr on failure.
 */
export async function applyCrds(stack: { kubectlPath: string; kubeconfigPath: string }): Promise<void> {
  const kubectl = (args: string[]) => run(stack.kubectlPath, ['--kubeconfig', stack.kubeconfigPath, ...args]);
  try {
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', CRD_DIR]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', CRD_DIR]);
  } catch (cause) {
    const stderr = (cause as { stderr?: string }).stderr ?? '';
    throw new Error(`apply CRDs from ${CRD_DIR}: ${stderr || (cause as Error).message}`, { cause });
  }
}
