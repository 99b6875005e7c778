import type { V1Job } from '@kubernetes/client-node';
import { isKubeError } from '../adapters/kube/errors.ts';
import { buildRunSecret } from '../core/run-secret-manifest.ts';
import type { RunConfigInput } from '../schemas/run-config.ts';
import type { StepContext } from './context.ts';

/**
 * Creates the per-run Secret `captf-run-<job>` of a created (or adopted, C02) Job, owned by the Job so the
 * garbage collector removes it with the Job. A Secret that exists already is the repeat of a crashed step.
 */
export async function createRunSecret(
  context: StepContext,
  job: V1Job,
  config: RunConfigInput,
): Promise<void> {
  const secret = buildRunSecret({
    job: {
      name: job.metadata?.name ?? '',
      namespace: context.snap.ref.namespace,
      uid: job.metadata?.uid ?? '',
      labels: job.metadata?.labels ?? {},
    },
    config,
  });
  try {
    await context.deps.kube.writer.createSecret(secret);
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
  }
  context.deps.failpoints.hit('after-run-secret-create');
}
