import type { KubeConfig } from '@kubernetes/client-node';

/** Where the adapter finds its credentials. */
export type KubeConfigSource =
  /** A kubeconfig file (local run, tests). */
  | { kind: 'file'; path: string }
  /** The pod's service account (in-cluster deployment). */
  | { kind: 'in-cluster' }
  /** A kubeconfig's content, never written to disk (AWS Lambda). */
  | { kind: 'content'; content: string }
  /** An already loaded config. */
  | { kind: 'loaded'; config: KubeConfig };

/**
 * Where a process's environment says its credentials are: `CAPTF_KUBECONFIG_CONTENT` (the handlers on AWS
 * Lambda, from SSM) wins, then the file `KUBECONFIG`, else the pod's service account; an empty value is
 * unset. The one reading of these variables for the handlers, the relay (whose environment has no content
 * variable), the runner-image reader (functions/runner-image.ts) and the Lambda's check that it has one
 * (functions/lambda-kubeconfig.ts).
 */
export function kubeConfigSourceOf(env: {
  KUBECONFIG?: string | undefined;
  CAPTF_KUBECONFIG_CONTENT?: string | undefined;
}): KubeConfigSource {
  if (env.CAPTF_KUBECONFIG_CONTENT) return { kind: 'content', content: env.CAPTF_KUBECONFIG_CONTENT };
  if (env.KUBECONFIG) return { kind: 'file', path: env.KUBECONFIG };
  return { kind: 'in-cluster' };
}
