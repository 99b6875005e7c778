import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The environment with `KUBECONFIG` pointing at a file: a Lambda has no service account, so the kubeconfig
 * arrives as the content of `CAPTF_KUBECONFIG_CONTENT` (docs/install.md) and is written to /tmp, readable by
 * this instance only. Throws when neither it nor `KUBECONFIG` is set: there is no in-cluster fallback here.
 */
export function withKubeconfigFile(
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  const content = env.CAPTF_KUBECONFIG_CONTENT;
  if (content === undefined || content === '') {
    if (env.KUBECONFIG) return env;
    throw new Error('read Lambda config: CAPTF_KUBECONFIG_CONTENT (or KUBECONFIG) is required on Lambda');
  }
  const path = join(mkdtempSync(join(tmpdir(), 'captf-')), 'kubeconfig');
  writeFileSync(path, content, { mode: 0o600 });
  return { ...env, KUBECONFIG: path };
}
