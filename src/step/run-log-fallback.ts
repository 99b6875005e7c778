import { isKubeError } from '../adapters/kube/errors.ts';
import type { Redactor } from '../core/redaction.ts';
import { type PodLogFallback, podLogSecret } from '../core/run-log-fallback.ts';
import type { StepDeps } from './deps.ts';

/**
 * Keeps a killed runner's pod log as its run log (src/core/run-log-fallback.ts, DESIGN.md section 7): one
 * read of the pod's log and one create, only for a run bookkeeping found without a result. Best effort
 * like the readable plan (src/step/perform.ts): a log that cannot be read (the node is gone) or a Secret
 * refused leaves the run without a log rather than holding its bookkeeping; `AlreadyExists` means the
 * runner wrote it after all. Only an outage of the create stops the step, which bookkeeps the Job again.
 */
export async function keepPodLog(
  deps: Pick<StepDeps, 'kube'>,
  fallback: PodLogFallback,
  redactor: Redactor,
): Promise<void> {
  const { namespace } = fallback.job;
  let text: string | undefined;
  try {
    text = await deps.kube.reader.readPodLog(
      namespace,
      fallback.pod,
      fallback.container,
      fallback.tailLines,
      fallback.limitBytes,
    );
  } catch {
    return;
  }
  if (text === undefined || text === '') return;
  const secret = podLogSecret(fallback, text, redactor);
  if (secret === undefined) return;
  try {
    await deps.kube.writer.createSecret(secret);
  } catch (error) {
    if (isKubeError(error) && error.outage) throw error;
  }
}
