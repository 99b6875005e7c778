import { readFileSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { kubeConfigSourceOf } from '../src/adapters/kube/config-source.ts';
import { loadKubeConfig } from '../src/adapters/kube/connection.ts';
import { type PodImages, runnerImageOfPod } from '../src/core/runner-image.ts';

/** The namespace file of every pod's ServiceAccount mount. */
const NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** Reads one pod by namespace and name. */
export type PodReader = (namespace: string, name: string) => Promise<PodImages>;

/** A PodReader over the in-cluster configuration, or over KUBECONFIG when it is set. */
export function podReaderOf(env: Record<string, string | undefined>): PodReader {
  const config = loadKubeConfig(kubeConfigSourceOf(env));
  const core = config.makeApiClient(CoreV1Api);
  return (namespace, name) => core.readNamespacedPod({ namespace, name });
}

/**
 * The environment with CAPTF_RUNNER_IMAGE taken from this pod's container CAPTF_RUNNER_IMAGE_CONTAINER
 * (src/core/runner-image.ts), when that is set; else unchanged. The pod is `POD_NAMESPACE`/`HOSTNAME`, the
 * namespace by default the ServiceAccount's. One API request, at start. Throws when the pod cannot be read
 * or has no such container: a controller that would start Jobs from a wrong runner image must not start.
 */
export async function withRunnerImageFromPod(
  env: Record<string, string | undefined>,
  reader: () => PodReader = () => podReaderOf(env),
): Promise<Record<string, string | undefined>> {
  const container = env.CAPTF_RUNNER_IMAGE_CONTAINER;
  if (container === undefined || container === '') return env;
  const namespace = env.POD_NAMESPACE ?? readFileSync(NAMESPACE_FILE, 'utf8').trim();
  const name = env.HOSTNAME;
  if (!name) throw new Error('runner image: HOSTNAME (the pod name) is not set');
  const pod = await reader()(namespace, name).catch((cause: Error) => {
    throw new Error(`runner image: read pod ${namespace}/${name}: ${cause.message}`, { cause });
  });
  const found = runnerImageOfPod(pod, container);
  if (!found.ok) throw new Error(found.message);
  return { ...env, CAPTF_RUNNER_IMAGE: found.image };
}
