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
  const { reader, writer } = context.deps.kube;
  try {
    await writer.createSecret(secret);
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    // Ours from a crashed step, or left by an earlier Job of the same name (deleted by hand, C14) that the
    // garbage collector has not removed yet: only the former may stay, the latter would vanish under us.
    const existing = await reader.getSecret(secret.metadata.namespace, secret.metadata.name);
    const ownerUid = existing?.metadata?.ownerReferences?.[0]?.uid;
    if (existing && ownerUid !== job.metadata?.uid) {
      await writer.deleteSecret(secret.metadata.namespace, secret.metadata.name, {
        uid: existing.metadata?.uid ?? '',
      });
      await writer.createSecret(secret);
    }
  }
  context.deps.failpoints.hit('after-run-secret-create');
}
