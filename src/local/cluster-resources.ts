import { join } from 'node:path';
import type { Kubectl } from './kubectl.ts';

/**
 * The installation-wide resources of the local run (DESIGN.md section 15): the CRDs and the plan approval
 * ValidatingAdmissionPolicy, applied with `kubectl apply` (a typed create through the apiextensions client
 * drops schema keys it does not model; kubectl sends the YAML as written).
 */

/** How long the CRDs may take to become Established, seconds. */
const ESTABLISHED_TIMEOUT_SECONDS = 60;

/** Applies infra/crds and infra/admission and waits until every CRD is Established. Throws on failure. */
export async function applyClusterResources(kubectl: Kubectl, repoRoot: string): Promise<void> {
  await kubectl.run(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'infra', 'crds')]);
  await kubectl.run([
    'wait',
    '--for=condition=Established',
    `--timeout=${ESTABLISHED_TIMEOUT_SECONDS}s`,
    '-f',
    join(repoRoot, 'infra', 'crds'),
  ]);
  await kubectl.run([
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(repoRoot, 'infra', 'admission'),
  ]);
}
