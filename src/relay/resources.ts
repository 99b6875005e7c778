import { CAPI_GROUP, CAPI_RESOURCES, type CapiKind } from '../adapters/kube/resources.ts';
import { LABELS } from '../core/job-labels.ts';
import { VARIABLES_OPT_IN_LABEL, VARIABLES_OPT_IN_VALUE } from '../core/variables-opt-in.ts';
import { listScopes, type WatchNamespaces } from '../core/watch-scope.ts';
import { CUSTOM_KINDS, KINDS, OUR_API_VERSION } from '../schemas/kinds/registry.ts';
/**
 * What the relay watches (DESIGN.md section 15; the same set the ApiServerSource in infra/knative watches):
 * our kinds, the Jobs and Pods labelled `captf.io/managed=true`, and Cluster API's Clusters, Machines and
 * MachinePools (pause, provisioned infrastructure, bootstrap data, replicas: what our objects read from
 * them), in all namespaces or the watched ones (`CAPTF_WATCH_NAMESPACES`); and the Secrets a wait can
 * depend on (DESIGN.md section 6), always sent in reference mode (the event names the Secret and carries
 * none of its data): those labelled `captf.io/variables=true` (what `variablesFrom`, `env` and state
 * encryption read once opted in) and Cluster API's bootstrap data Secrets (type `cluster.x-k8s.io/secret`).
 * Those are their own identity's to read (infra/rbac/secret-events.yaml), never the other kinds' source's.
 */
export interface RelayResource {
  apiVersion: string;
  kind: string;
  /** The resource's plural, for the watch path. */
  plural: string;
  labelSelector?: string;
  /** A field selector (Secrets: `type=`), where the API server supports one for the resource. */
  fieldSelector?: string;
  /** Watch this namespace only; absent: all namespaces. */
  namespace?: string;
  /** Sent in reference mode whatever the relay's mode: the object's content is not ours to pass on. */
  referenceOnly?: boolean;
}

const MANAGED = `${LABELS.managed}=true`;

/** The Cluster API kinds watched, in the order of infra/knative/apiserversource.yaml. */
const CAPI_WATCHED: readonly CapiKind[] = ['Cluster', 'Machine', 'MachinePool'];

/** Cluster API's bootstrap data Secret type (the BootstrapConfig data secret contract). */
export const BOOTSTRAP_SECRET_TYPE = 'cluster.x-k8s.io/secret';

/** The Secrets watched, metadata only in the events: a wait on one ends with its event. */
export const SECRET_RESOURCES: readonly RelayResource[] = [
  {
    apiVersion: 'v1',
    kind: 'Secret',
    plural: 'secrets',
    labelSelector: `${VARIABLES_OPT_IN_LABEL}=${VARIABLES_OPT_IN_VALUE}`,
    referenceOnly: true,
  },
  {
    apiVersion: 'v1',
    kind: 'Secret',
    plural: 'secrets',
    fieldSelector: `type=${BOOTSTRAP_SECRET_TYPE}`,
    referenceOnly: true,
  },
];

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
 * Which resources one relay watches (`CAPTF_RELAY_WATCH`): `objects` ({@link RELAY_RESOURCES}, under the
 * event source's identity), `secrets` ({@link SECRET_RESOURCES}, under their own identity, a relay of its
 * own), or `all` where one identity may read both (the local stack).
 */
export type RelayWatch = 'all' | 'objects' | 'secrets';

/** The resources of `watch`. */
export function resourcesOf(watch: RelayWatch): readonly RelayResource[] {
  if (watch === 'objects') return RELAY_RESOURCES;
  if (watch === 'secrets') return SECRET_RESOURCES;
  return [...RELAY_RESOURCES, ...SECRET_RESOURCES];
}

/**
 * What the relay watches for `watched` (src/core/watch-scope.ts): the resources of `watch` (default
 * {@link RELAY_RESOURCES}) cluster-wide for all namespaces, else each of them once per watched namespace.
 */
export function watchedResources(watched: WatchNamespaces, watch: RelayWatch = 'objects'): RelayResource[] {
  return listScopes(watched).flatMap((namespace) =>
    resourcesOf(watch).map((resource) => (namespace === undefined ? resource : { ...resource, namespace })),
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
