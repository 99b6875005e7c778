import type { V1Job, V1Lease, V1Pod, V1RoleBinding, V1Secret } from '@kubernetes/client-node';
import type { CustomKind, CustomResource } from '../../schemas/kinds/registry.ts';
import type { KubeApis } from './connection.ts';
import { type CustomObject, parseCustomList, parseCustomObject } from './custom-object.ts';
import { isKubeError, toKubeError } from './errors.ts';
import { CAPI_RESOURCES, type CapiKind, CUSTOM_RESOURCES } from './resources.ts';

/**
 * Which objects a list returns: one namespace (or all when omitted) and a label selector, either as
 * `key=value` pairs or as a raw selector string (`captf.io/owner-uid=…,!captf.io/bookkept`).
 */
export interface ListSelector {
  namespace?: string;
  labelSelector?: string | Record<string, string>;
}

/**
 * Every read the step makes, always live from the API server (DESIGN.md section 1: never from the event
 * payload, never from a cache). Reads of one object answer `undefined` for NotFound; every other failure
 * throws a KubeError. Lists follow `continue` tokens until the end, so they return every match.
 * Typed models (V1Job, V1Pod, V1Secret) come from client-node's deserializer: their timestamps are `Date`s.
 */
export interface KubeReader {
  /** One of our objects, or undefined when it does not exist. */
  getCustomObject(kind: CustomKind, namespace: string, name: string): Promise<CustomObject | undefined>;
  /** Our objects of one kind matching the selector. */
  listCustomObjects(kind: CustomKind, selector?: ListSelector): Promise<CustomObject[]>;
  /**
   * A Cluster API object (cluster.x-k8s.io/v1beta2), or undefined when it does not exist or Cluster API
   * is not installed (both answer 404).
   */
  getCapiObject(kind: CapiKind, namespace: string, name: string): Promise<CustomObject | undefined>;
  getJob(namespace: string, name: string): Promise<V1Job | undefined>;
  listJobs(selector?: ListSelector): Promise<V1Job[]>;
  getPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  listPods(selector?: ListSelector): Promise<V1Pod[]>;
  /**
   * The last `tailLines` lines of one container's log (the kubelet's, through the API server), at most
   * `limitBytes` of them from their start when given, or undefined when the pod is gone.
   */
  readPodLog(
    namespace: string,
    pod: string,
    container: string,
    tailLines: number,
    limitBytes?: number,
  ): Promise<string | undefined>;
  /** A Secret, data included (base64): never log it. */
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
  /** A RoleBinding (the marker of a runner identity, src/step/runner-identity.ts). */
  getRoleBinding(namespace: string, name: string): Promise<V1RoleBinding | undefined>;
  /** A Lease (an object's state lock, src/step/runner-identity.ts). */
  getLease(namespace: string, name: string): Promise<V1Lease | undefined>;
  listSecrets(selector?: ListSelector): Promise<V1Secret[]>;
}

/** What client-node's ObjectSerializer throws for a 2xx answer without a Content-Type. */
const NO_CONTENT_TYPE = 'Cannot parse content. No Content-Type defined.';

/** Page size of list calls; the API server's own default cap for a consistent page is similar. */
export const DEFAULT_PAGE_SIZE = 500;

/** Turns the selector's pairs into `k=v,k2=v2`; a string passes through. */
export function labelSelectorString(selector: ListSelector['labelSelector']): string | undefined {
  if (selector === undefined || typeof selector === 'string') return selector;
  const pairs = Object.entries(selector).map(([key, value]) => `${key}=${value}`);
  return pairs.length === 0 ? undefined : pairs.join(',');
}

interface Page<T> {
  items: T[];
  continueToken: string;
}

/**
 * Follows `continue` tokens until the last page. A token that expired mid-list answers 410 Gone and is
 * thrown as such: the caller retries the step, which lists again from the start.
 */
async function readAllPages<T>(
  fetchPage: (continueToken: string | undefined) => Promise<Page<T>>,
): Promise<T[]> {
  const items: T[] = [];
  let continueToken: string | undefined;
  do {
    const page = await fetchPage(continueToken);
    items.push(...page.items);
    continueToken = page.continueToken === '' ? undefined : page.continueToken;
  } while (continueToken !== undefined);
  return items;
}

/** Runs a read of one object; NotFound becomes undefined, every other failure a KubeError. */
async function readOne<T>(action: string, read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    const normalised = toKubeError(error, action);
    if (isKubeError(normalised, 'NotFound')) return undefined;
    throw normalised;
  }
}

async function listAll<T>(
  action: string,
  fetchPage: (continueToken: string | undefined) => Promise<Page<T>>,
): Promise<T[]> {
  try {
    return await readAllPages(fetchPage);
  } catch (error) {
    throw toKubeError(error, action);
  }
}

/** The KubeReader over client-node's generated APIs. */
export class ApiKubeReader implements KubeReader {
  readonly #apis: KubeApis;
  readonly #pageSize: number;

  constructor(apis: KubeApis, options: { pageSize: number }) {
    this.#apis = apis;
    this.#pageSize = options.pageSize;
  }

  getCustomObject(kind: CustomKind, namespace: string, name: string): Promise<CustomObject | undefined> {
    return this.#getCustom(CUSTOM_RESOURCES[kind], kind, namespace, name);
  }

  getCapiObject(kind: CapiKind, namespace: string, name: string): Promise<CustomObject | undefined> {
    return this.#getCustom(CAPI_RESOURCES[kind], kind, namespace, name);
  }

  async #getCustom(
    resource: CustomResource,
    kind: string,
    namespace: string,
    name: string,
  ): Promise<CustomObject | undefined> {
    const action = `get ${kind} ${namespace}/${name}`;
    const found: unknown = await readOne(action, () =>
      this.#apis.custom.getNamespacedCustomObject({ ...resource, namespace, name }),
    );
    return found === undefined ? undefined : parseCustomObject(found, action);
  }

  listCustomObjects(kind: CustomKind, selector: ListSelector = {}): Promise<CustomObject[]> {
    const resource = CUSTOM_RESOURCES[kind];
    const action = `list ${kind}`;
    const labelSelector = labelSelectorString(selector.labelSelector);
    const { namespace } = selector;
    return listAll(action, async (continueToken) => {
      const query = { ...resource, labelSelector, limit: this.#pageSize, _continue: continueToken };
      const page: unknown =
        namespace === undefined
          ? await this.#apis.custom.listClusterCustomObject(query)
          : await this.#apis.custom.listNamespacedCustomObject({ ...query, namespace });
      return parseCustomList(page, action);
    });
  }

  getJob(namespace: string, name: string): Promise<V1Job | undefined> {
    return readOne(`get Job ${namespace}/${name}`, () =>
      this.#apis.batch.readNamespacedJob({ namespace, name }),
    );
  }

  listJobs(selector: ListSelector = {}): Promise<V1Job[]> {
    const labelSelector = labelSelectorString(selector.labelSelector);
    const { namespace } = selector;
    return listAll('list Job', async (continueToken) => {
      const query = { labelSelector, limit: this.#pageSize, _continue: continueToken };
      const list =
        namespace === undefined
          ? await this.#apis.batch.listJobForAllNamespaces(query)
          : await this.#apis.batch.listNamespacedJob({ ...query, namespace });
      return { items: list.items, continueToken: list.metadata?._continue ?? '' };
    });
  }

  getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    return readOne(`get Pod ${namespace}/${name}`, () =>
      this.#apis.core.readNamespacedPod({ namespace, name }),
    );
  }

  readPodLog(
    namespace: string,
    pod: string,
    container: string,
    tailLines: number,
    limitBytes?: number,
  ): Promise<string | undefined> {
    return readOne(`get Pod ${namespace}/${pod} log`, async () => {
      try {
        return await this.#apis.core.readNamespacedPodLog({
          namespace,
          name: pod,
          container,
          tailLines,
          ...(limitBytes === undefined ? {} : { limitBytes }),
        });
      } catch (error) {
        // The API server answers 200 with no body and no Content-Type for a pod no node runs (nothing to
        // stream), and client-node 2.x then throws while parsing an answer that is not an error: no log.
        if (error instanceof Error && error.message === NO_CONTENT_TYPE) return '';
        throw error;
      }
    });
  }

  listPods(selector: ListSelector = {}): Promise<V1Pod[]> {
    const labelSelector = labelSelectorString(selector.labelSelector);
    const { namespace } = selector;
    return listAll('list Pod', async (continueToken) => {
      const query = { labelSelector, limit: this.#pageSize, _continue: continueToken };
      const list =
        namespace === undefined
          ? await this.#apis.core.listPodForAllNamespaces(query)
          : await this.#apis.core.listNamespacedPod({ ...query, namespace });
      return { items: list.items, continueToken: list.metadata?._continue ?? '' };
    });
  }

  getSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    return readOne(`get Secret ${namespace}/${name}`, () =>
      this.#apis.core.readNamespacedSecret({ namespace, name }),
    );
  }

  getRoleBinding(namespace: string, name: string): Promise<V1RoleBinding | undefined> {
    return readOne(`get RoleBinding ${namespace}/${name}`, () =>
      this.#apis.rbac.readNamespacedRoleBinding({ namespace, name }),
    );
  }

  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return readOne(`get Lease ${namespace}/${name}`, () =>
      this.#apis.coordination.readNamespacedLease({ namespace, name }),
    );
  }

  listSecrets(selector: ListSelector = {}): Promise<V1Secret[]> {
    const labelSelector = labelSelectorString(selector.labelSelector);
    const { namespace } = selector;
    return listAll('list Secret', async (continueToken) => {
      const query = { labelSelector, limit: this.#pageSize, _continue: continueToken };
      const list =
        namespace === undefined
          ? await this.#apis.core.listSecretForAllNamespaces(query)
          : await this.#apis.core.listNamespacedSecret({ ...query, namespace });
      return { items: list.items, continueToken: list.metadata?._continue ?? '' };
    });
  }
}
