import { kubeConfigSourceOf } from '../src/adapters/kube/config-source.ts';

/**
 * A Lambda has no service account, so its kubeconfig arrives as the content of `CAPTF_KUBECONFIG_CONTENT`
 * (serverless.yml, from SSM: functions/lambda-secrets.ts), which the handlers load from memory
 * (src/config.ts): no credential is written to the instance's /tmp, and a rotation leaves none behind.
 * Returns `env` unchanged; throws when neither it nor `KUBECONFIG` is set: there is no in-cluster fallback
 * here.
 */
export function requireLambdaKubeconfig(
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  if (kubeConfigSourceOf(env).kind !== 'in-cluster') return env;
  throw new Error('read Lambda config: CAPTF_KUBECONFIG_CONTENT (or KUBECONFIG) is required on Lambda');
}
