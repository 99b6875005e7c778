import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readVersions } from '../../src/local/binaries.ts';

const run = promisify(execFile);

/**
 * Knative's CRDs, taken from its Go modules at the versions pinned in scripts/versions.env
 * (`KNATIVE_SERVING_VERSION`, `KNATIVE_EVENTING_VERSION`): Serving's `config/core/300-resources/` and
 * Eventing's ApiServerSource and PingSource. `go mod download` fetches each module zip once into Go's
 * module cache. The local control plane runs no Knative controller: with these CRDs our Knative manifests
 * apply (and are validated by Knative's schemas), nothing reconciles them.
 */
export async function knativeCrdFiles(): Promise<string[]> {
  const versions = readVersions();
  const serving = versions.KNATIVE_SERVING_VERSION;
  const eventing = versions.KNATIVE_EVENTING_VERSION;
  if (!serving || !eventing)
    throw new Error('read scripts/versions.env: KNATIVE_SERVING_VERSION or KNATIVE_EVENTING_VERSION missing');
  const dirOf = async (module: string): Promise<string> => {
    try {
      const { stdout } = await run('go', ['mod', 'download', '-json', module], {
        env: { ...process.env, GOFLAGS: '-mod=mod' },
        maxBuffer: 4 * 1024 * 1024,
      });
      return (JSON.parse(stdout) as { Dir: string }).Dir;
    } catch (cause) {
      const stderr = (cause as { stderr?: string }).stderr ?? (cause as Error).message;
      throw new Error(`go mod download ${module}: ${stderr}`, { cause });
    }
  };
  const servingDir = await dirOf(`knative.dev/serving@v${serving}`);
  const eventingDir = await dirOf(`knative.dev/eventing@v${eventing}`);
  return [
    join(servingDir, 'config/core/300-resources'),
    join(eventingDir, 'config/core/resources/apiserversource.yaml'),
    join(eventingDir, 'config/core/resources/pingsource.yaml'),
  ];
}

/** Applies Knative's CRDs (idempotent) and waits until they are Established; throws with kubectl's stderr. */
export async function applyKnativeCrds(stack: {
  kubectlPath: string;
  kubeconfigPath: string;
}): Promise<void> {
  const files = (await knativeCrdFiles()).flatMap((path) => ['-f', path]);
  const kubectl = (args: string[]) => run(stack.kubectlPath, ['--kubeconfig', stack.kubeconfigPath, ...args]);
  try {
    await kubectl(['apply', '--server-side', '--force-conflicts', ...files]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...files]);
  } catch (cause) {
    const stderr = (cause as { stderr?: string }).stderr ?? '';
    throw new Error(`apply Knative CRDs: ${stderr || (cause as Error).message}`, { cause });
  }
}
