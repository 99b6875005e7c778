import { KubeConfig } from '@kubernetes/client-node';
import { type KubeApis, makeKubeApis } from '../adapters/kube/connection.ts';
import { ApiKubeReader, DEFAULT_PAGE_SIZE, type KubeReader } from '../adapters/kube/reader.ts';
import { RequestCounter } from '../adapters/kube/request-count.ts';
import type { ConnectionFlags } from '../core/plugin-args.ts';

/**
 * The caller's connection, as kubectl would make it: the kubeconfig of `--kubeconfig`, else `KUBECONFIG`,
 * else `~/.kube/config` (client-node's `loadFromDefault`), the context of `--context`, the namespace of
 * `-n`, else the context's, else `default`, and `--as`/`--as-group` impersonation headers.
 */

/** The API clients and the reader of one caller. */
export interface Caller {
  apis: KubeApis;
  reader: KubeReader;
  namespace: string;
}

/** Per-request budget: a person waits for the answer. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Connects as the caller; throws with a readable message when the kubeconfig cannot be used. */
export function connect(flags: ConnectionFlags): Caller {
  const config = new KubeConfig();
  if (flags.kubeconfig !== undefined) config.loadFromFile(flags.kubeconfig);
  else config.loadFromDefault();
  if (flags.context !== undefined) config.setCurrentContext(flags.context);
  if (!config.getCurrentCluster()) throw new Error('no current cluster in the kubeconfig');
  if (flags.asGroups.length > 1)
    throw new Error('--as-group: one group only (the header carries one value here)');
  const headers: Record<string, string> = {
    ...(flags.as === undefined ? {} : { 'Impersonate-User': flags.as }),
    ...(flags.asGroups[0] === undefined ? {} : { 'Impersonate-Group': flags.asGroups[0] }),
  };
  const apis = makeKubeApis(config, {
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    counter: new RequestCounter(),
    headers,
  });
  const contextNamespace = config.getContextObject(config.getCurrentContext())?.namespace;
  return {
    apis,
    reader: new ApiKubeReader(apis, { pageSize: DEFAULT_PAGE_SIZE }),
    namespace: flags.namespace ?? contextNamespace ?? 'default',
  };
}
