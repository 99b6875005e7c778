import { type KubeConfig, KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import type { KubeObject } from './event.ts';
import { collectionPath, type RelayResource } from './resources.ts';
import type { WatchEnd, WatchNotification, WatchSource } from './watch-loop.ts';

/** Server-side watch timeout, seconds: the API server closes a watch after this, client-go style. */
const WATCH_TIMEOUT_SECONDS = 300;

/**
 * What the relay keeps of an object: all of it, or for a reference-only resource (Secrets) its identity and
 * version alone, so no Secret's data stays in the relay's memory beyond the decode of one notification
 * (client-node's Watch cannot ask the API server for metadata only).
 */
function keptOf(resource: RelayResource, object: KubeObject): KubeObject {
  if (resource.referenceOnly !== true) return object;
  const { name, namespace, uid, resourceVersion } = object.metadata ?? {};
  return {
    apiVersion: object.apiVersion ?? resource.apiVersion,
    kind: object.kind ?? resource.kind,
    metadata: { name, namespace, uid, resourceVersion },
  };
}

/** The relay's WatchSource over client-node 2.x (`KubernetesObjectApi.list` and `Watch`). */
export function kubeWatchSource(kc: KubeConfig): WatchSource {
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const watcher = new Watch(kc);
  return {
    async list(resource) {
      const list = await objects.list(
        resource.apiVersion,
        resource.kind,
        resource.namespace,
        undefined,
        undefined,
        undefined,
        resource.fieldSelector,
        resource.labelSelector,
      );
      // Typed models turn timestamps into Date objects; JSON round-trip gives the wire shape back.
      const items = JSON.parse(JSON.stringify(list.items)) as KubeObject[];
      return {
        items: items.map((item) =>
          keptOf(resource, { apiVersion: resource.apiVersion, kind: resource.kind, ...item }),
        ),
        resourceVersion: list.metadata?.resourceVersion ?? '',
      };
    },
    watch(resource, resourceVersion, onEvent, signal) {
      return new Promise<WatchEnd>((resolve) => {
        let chain: Promise<void> = Promise.resolve();
        let end: WatchEnd | undefined;
        let controller: AbortController | undefined;
        const finish = (result: WatchEnd) => {
          if (end !== undefined) return;
          end = result;
          signal.removeEventListener('abort', onAbort);
          controller?.abort();
          // Deliver what was already received before reporting the end.
          void chain.then(() => resolve(result));
        };
        const onAbort = () => finish({ kind: 'closed' });
        signal.addEventListener('abort', onAbort, { once: true });
        watcher
          .watch(
            collectionPath(resource),
            {
              resourceVersion,
              allowWatchBookmarks: true,
              timeoutSeconds: WATCH_TIMEOUT_SECONDS,
              labelSelector: resource.labelSelector,
              fieldSelector: resource.fieldSelector,
            },
            (type: string, object: KubeObject) => {
              if (end !== undefined) return;
              if (type === 'ERROR') {
                const code = (object as { code?: unknown }).code;
                finish(
                  code === 410
                    ? { kind: 'gone' }
                    : {
                        kind: 'failed',
                        error: new Error(`watch error event: ${JSON.stringify(object).slice(0, 200)}`),
                      },
                );
                return;
              }
              const notification = { type, object: keptOf(resource, object) } as WatchNotification;
              chain = chain
                .then(() => onEvent(notification))
                .catch((error: unknown) => finish({ kind: 'failed', error }));
            },
            (error: unknown) => {
              const status = (error as { statusCode?: unknown } | null)?.statusCode;
              if (error === null || error === undefined) finish({ kind: 'closed' });
              else if (status === 410) finish({ kind: 'gone' });
              else if (error instanceof Error && error.name === 'TimeoutError') finish({ kind: 'closed' });
              else finish({ kind: 'failed', error });
            },
          )
          .then((c) => {
            controller = c;
            if (end !== undefined) c.abort();
          })
          .catch((error: unknown) => finish({ kind: 'failed', error }));
      });
    },
  };
}
