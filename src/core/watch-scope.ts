/**
 * The namespaces one installation reconciles (`CAPTF_WATCH_NAMESPACES`), like Cluster API managers'
 * `--namespace` and operator-sdk's `WATCH_NAMESPACE`: an empty list means every namespace. The relay
 * watches only these, the sweep lists only these, and the handlers ignore events and refuse reconcile
 * calls about objects elsewhere, so two installations with disjoint namespaces never step each other's
 * objects (each keeps its own Redis keys and would otherwise run Jobs for objects the other leases).
 */

/** Watched namespace names, sorted and unique; empty: all namespaces. */
export type WatchNamespaces = readonly string[];

/** Every namespace. */
export const ALL_NAMESPACES: WatchNamespaces = [];

/** True when `namespace` is watched. */
export function watchesNamespace(watched: WatchNamespaces, namespace: string): boolean {
  return watched.length === 0 || watched.includes(namespace);
}

/**
 * The namespaces a list or watch must cover: `[undefined]` (one cluster-wide request) for all, else one
 * request per watched namespace.
 */
export function listScopes(watched: WatchNamespaces): readonly (string | undefined)[] {
  return watched.length === 0 ? [undefined] : watched;
}
