import { CAPI_GROUP, CAPI_RESOURCES, type CapiKind } from '../adapters/kube/resources.ts';
import { LABELS } from '../core/job-labels.ts';
import { listScopes, type WatchNamespaces } from '../core/watch-scope.ts';
import { CUSTOM_KINDS, KINDS, OUR_API_VERSION } from '../schemas/kinds/registry.ts';
/**
 * What the relay watches (DESIGN.md section 15; the same set the ApiServerSource in infra/knative watches):
 * our kinds, the Jobs and Pods labelled `captf.io/managed=true`, and Cluster API's Clusters, Machines and
 * MachinePools (pause, provisioned infrastructure, bootstrap data, replicas: what our objects read from
 * them), in all namespaces or the watched ones (`CAPTF_WATCH_NAMESPACES`). No Secrets: nothing
 * waits on a Secret's change (a per-run Secret is the controller's own; a rotated referenced Secret changes the
 * inputs hash, seen at the object's next step), and the event source's role reads none.
 */
export interface RelayResource {
  apiVersion: string;
  kind: string;
  /** The resource's plural, for the watch path. */
  plural: string;
  labelSelector?: string;
  /** Watch this namespace only; absent: all namespaces. */
  namespace?: string;
}

const MANAGED = `${LABELS.managed}=true`;

/** The Cluster API kinds watched, in the order of infra/knative/apiserversource.yaml. */
const CAPI_WATCHED: readonly CapiKind[] = ['Cluster', 'Machine', 'MachinePool'];

export const RELAY_RESOURCES: readonly RelayResource[] = [
  ...CUSTOM_KINDS.map((kind) => ({ apiVersion: OUR_API_VERSION, kind, plural: KINDS[kind].plural })),
  { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', labelSelector: MANAGED },
  { apiVersion: 'v1', kind: 'Pod', plural: 'pods', labelSelector: MANAGED },
  ...CAPI_WATCHED.map((kind) => ({
    apiVersion: `${CAPI_GROUP}/${CAPI_RESOURCES[kind].version}`,
    kind,
    plural: CAPI_RESOURCES[kind].plural,
  })),
];

/**
 * What the relay watches for `watched` (src/core/watch-scope.ts): {@link RELAY_RESOURCES} cluster-wide for
 * all namespaces, else each of them once per watched namespace.
 */
export function watchedResources(watched: WatchNamespaces): RelayResource[] {
  return listScopes(watched).flatMap((namespace) =>
    RELAY_RESOURCES.map((resource) => (namespace === undefined ? resource : { ...resource, namespace })),
  );
}

/**
 * The collection path of a resource: cluster-wide `/api/v1/pods`, `/apis/batch/v1/jobs`, or namespaced
 * `/apis/batch/v1/namespaces/<ns>/jobs` when it names a namespace.
 */
export function collectionPath(resource: RelayResource): string {
  const base = resource.apiVersion.includes('/')
    ? `/apis/${resource.apiVersion}`
    : `/api/${resource.apiVersion}`;
  return resource.namespace === undefined
    ? `${base}/${resource.plural}`
    : `${base}/namespaces/${resource.namespace}/${resource.plural}`;
}
