import type { V1Job } from '@kubernetes/client-node';
import { isKubeError } from '../adapters/kube/errors.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { KubeWriter } from '../adapters/kube/writer.ts';
import { buildRunSecret } from '../core/run-secret-manifest.ts';
import type { RunConfigInput } from '../schemas/run-config.ts';

/**
 * Creates the per-run Secret `captf-run-<job>` of a created (or adopted, C02) Job, owned by the Job so the
 * garbage collector removes it with the Job. A Secret that exists already is the repeat of a crashed step.
 * Answers the size of the Secret's data in bytes (`captf_run_inputs_bytes`: the API server refuses a Secret
 * over 1 MiB, so a growing run config is worth an alert before it stops every run).
 */
export async function createRunSecret(
  kube: { reader: KubeReader; writer: KubeWriter },
  namespace: string,
  job: V1Job,
  config: RunConfigInput,
): Promise<number> {
  const secret = buildRunSecret({
    job: {
      name: job.metadata?.name ?? '',
      namespace,
      uid: job.metadata?.uid ?? '',
      labels: job.metadata?.labels ?? {},
      ownerReferences: (job.metadata?.ownerReferences ?? []).map((ref) => ({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        name: ref.name,
        uid: ref.uid,
        controller: ref.controller ?? false,
        blockOwnerDeletion: ref.blockOwnerDeletion ?? false,
      })),
    },
    config,
  });
  const bytes = Object.values(secret.stringData).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  const { reader, writer } = kube;
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
  return bytes;
}
