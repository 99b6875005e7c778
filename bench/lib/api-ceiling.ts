import type { CoreV1Api } from '@kubernetes/client-node';

/**
 * The API server's own ceiling in requests per second, measured in the run that reports against it: for
 * `ms` milliseconds, `concurrency` workers each create a ConfigMap in `namespace` and read it back (two
 * requests per round) through the given client, so the figure shares the handlers' client and TLS.
 */
export async function measureApiCeiling(
  core: CoreV1Api,
  namespace: string,
  ms: number,
  concurrency: number,
): Promise<number> {
  const until = performance.now() + ms;
  let calls = 0;
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const name = `ceiling-${n}`;
        n += 1;
        await core.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name }, data: { n: String(n) } },
        });
        await core.readNamespacedConfigMap({ namespace, name });
        calls += 2;
      }
    }),
  );
  return calls / (ms / 1000);
}
