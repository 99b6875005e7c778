import {
  type EventsV1Event,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
  type V1Lease,
  V1MicroTime,
  type V1ObjectMeta,
  type V1Role,
  type V1RoleBinding,
  type V1Secret,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import type { EventSpec } from '../../core/event-spec.ts';
import type { CustomKind } from '../../schemas/kinds/registry.ts';
import type { Clock } from '../clock.ts';
import type { KubeApis } from './connection.ts';
import { type CustomObject, type NewCustomObject, parseCustomObject } from './custom-object.ts';
import { isKubeError, toKubeError } from './errors.ts';
import { eventNameOf } from './event-name.ts';
import { CUSTOM_RESOURCES } from './resources.ts';

/** The object a write targets, with the resourceVersion it was read at (the precondition). */
export interface VersionedRef {
  namespace: string;
  name: string;
  /** The write fails with Conflict unless the object is still at this version. */
  resourceVersion: string;
}

/**
 * A metadata change, as a JSON merge patch (RFC 7386): a `null` label or annotation removes it;
 * `finalizers` replaces the whole list (the resourceVersion precondition makes that safe).
 */
export interface MetadataPatch {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  finalizers?: string[];
}

/** What a delete found: the object was there (deletion started) or was already gone. */
export type DeleteResult = 'deleted' | 'absent';

/** What a finalizer removal found: the pod is left without it, or the pod is gone (nothing to hold). */
export type FinalizerRemoval = 'removed' | 'absent';

/** What an event create found: a new Event, or the same transition's Event from an earlier step. */
export type EmitResult = 'created' | 'already-emitted';

/**
 * Every mutation the step makes. Failures throw a KubeError; `error.outcome` says whether the write may
 * have landed (DESIGN.md section 5 step 8). Deletes always use `propagationPolicy: Background` (C13) and
 * treat NotFound as done.
 */
export interface KubeWriter {
  /** Creates a Job in `job.metadata.namespace`. AlreadyExists when the (deterministic) name is taken. */
  createJob(job: V1Job): Promise<V1Job>;
  /** Creates a Secret in `secret.metadata.namespace`. */
  createSecret(secret: V1Secret): Promise<V1Secret>;
  /** Creates a ServiceAccount, a Lease, a Role or a RoleBinding (a runner identity, src/step/runner-identity.ts). */
  createServiceAccount(account: V1ServiceAccount): Promise<V1ServiceAccount>;
  createLease(lease: V1Lease): Promise<V1Lease>;
  createRole(role: V1Role): Promise<V1Role>;
  createRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding>;
  /**
   * Replaces a ServiceAccount, Role or RoleBinding unconditionally (no resourceVersion: the manifest is the
   * whole truth).
   */
  replaceServiceAccount(account: V1ServiceAccount): Promise<V1ServiceAccount>;
  replaceRole(role: V1Role): Promise<V1Role>;
  replaceRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding>;
  /** Creates one of our objects (a TerraformPlan). */
  createCustomObject(kind: CustomKind, object: NewCustomObject): Promise<CustomObject>;
  /**
   * Replaces the status subresource with `object.status`; `object.metadata.resourceVersion` is the
   * precondition (Conflict when stale). Fields absent from `object.status` are removed.
   */
  replaceStatus(kind: CustomKind, object: CustomObject): Promise<CustomObject>;
  /**
   * Merge-patches the status subresource (`null` removes a field; arrays are replaced whole) under a
   * resourceVersion precondition.
   */
  patchStatus(kind: CustomKind, target: VersionedRef, status: Record<string, unknown>): Promise<CustomObject>;
  /**
   * Merge-patches `spec` of one of our objects under a resourceVersion precondition: only for the Cluster API
   * contract fields the provider owns there (`controlPlaneEndpoint`, `providerID`, `providerIDList`).
   */
  patchSpec(kind: CustomKind, target: VersionedRef, spec: Record<string, unknown>): Promise<CustomObject>;
  /** Merge-patches labels, annotations or finalizers of one of our objects under a resourceVersion precondition. */
  patchCustomMetadata(kind: CustomKind, target: VersionedRef, patch: MetadataPatch): Promise<CustomObject>;
  /** Merge-patches a Job's labels or annotations (e.g. `captf.io/bookkept`) under a resourceVersion precondition. */
  patchJobMetadata(target: VersionedRef, patch: MetadataPatch): Promise<V1Job>;
  /**
   * Merge-patches a Secret's labels, without a read or a resourceVersion precondition (a merge patch of
   * labels keeps every other label and field): only the `clusterctl move` label of a state Secret
   * (infra/admission/controller-runner-identity-policy.yaml refuses any other Secret update). NotFound when
   * the Secret is gone.
   */
  patchSecretLabels(
    target: { namespace: string; name: string },
    labels: Record<string, string>,
  ): Promise<V1Secret>;
  /** Deletes a Job and (in the background) its pods; `uid` makes it delete only that incarnation. */
  deleteJob(namespace: string, name: string, preconditions?: { uid?: string }): Promise<DeleteResult>;
  deleteSecret(namespace: string, name: string, preconditions?: { uid?: string }): Promise<DeleteResult>;
  /**
   * Deletes one pod a Job of ours left orphaned (src/core/orphaned-pods.ts), that incarnation at the version
   * judged only (Conflict otherwise); infra/admission/controller-pod-policy.yaml refuses the controller any
   * other pod delete.
   */
  deletePod(
    namespace: string,
    name: string,
    preconditions: { uid: string; resourceVersion: string },
  ): Promise<DeleteResult>;
  /** Deletes a Lease (an object's state lock, once its state is gone); absent is done. */
  deleteLease(namespace: string, name: string): Promise<DeleteResult>;
  deleteCustomObject(kind: CustomKind, namespace: string, name: string): Promise<DeleteResult>;
  /**
   * Removes one finalizer from a pod and leaves every other (the Job controller's own) in place: a
   * strategic-merge `$deleteFromPrimitiveList`, so no index and no read are needed. A finalizer already
   * absent is a no-op (`removed`); a pod gone is `absent`. With `resourceVersion`, Conflict when the pod
   * changed since.
   */
  removePodFinalizer(
    namespace: string,
    name: string,
    finalizer: string,
    resourceVersion?: string,
  ): Promise<FinalizerRemoval>;
  /** Creates the Event of one transition, once (deterministic name; AlreadyExists = emitted before). */
  emitEvent(event: EventSpec): Promise<EmitResult>;
}

/** Name written to managedFields for every write. */
const FIELD_MANAGER = 'captf';

/** Who reports the Events (events.k8s.io/v1 requires both fields). */
export interface EventReporter {
  /** e.g. `captf.io/controller`. */
  controller: string;
  /** This instance, at most 128 characters, e.g. the pod or host name. */
  instance: string;
}

const mergePatch = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategicMergePatch = () => setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

async function deleting(action: string, run: () => Promise<unknown>): Promise<DeleteResult> {
  try {
    await run();
    return 'deleted';
  } catch (error) {
    const normalised = toKubeError(error, action);
    if (isKubeError(normalised, 'NotFound')) return 'absent';
    throw normalised;
  }
}

async function writing<T>(action: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toKubeError(error, action);
  }
}

/** The namespace and name of an object to create; a missing one is the caller's bug, thrown before any request. */
function placementOf(metadata: V1ObjectMeta | undefined, kind: string): { namespace: string; name: string } {
  if (!metadata?.namespace || !metadata.name)
    throw new Error(`create ${kind}: metadata.namespace and metadata.name are required`);
  return { namespace: metadata.namespace, name: metadata.name };
}

function metadataPatchBody(target: VersionedRef, patch: MetadataPatch): object {
  return { metadata: { resourceVersion: target.resourceVersion, ...patch } };
}

/** The KubeWriter over client-node's generated APIs. */
export class ApiKubeWriter implements KubeWriter {
  readonly #apis: KubeApis;
  readonly #reporter: EventReporter;
  readonly #clock: Clock;

  constructor(apis: KubeApis, options: { reporter: EventReporter; clock: Clock }) {
    this.#apis = apis;
    this.#reporter = options.reporter;
    this.#clock = options.clock;
  }

  createJob(job: V1Job): Promise<V1Job> {
    const { namespace, name } = placementOf(job.metadata, 'Job');
    return writing(`create Job ${namespace}/${name}`, () =>
      this.#apis.batch.createNamespacedJob({ namespace, body: job, fieldManager: FIELD_MANAGER }),
    );
  }

  createSecret(secret: V1Secret): Promise<V1Secret> {
    const { namespace, name } = placementOf(secret.metadata, 'Secret');
    return writing(`create Secret ${namespace}/${name}`, () =>
      this.#apis.core.createNamespacedSecret({ namespace, body: secret, fieldManager: FIELD_MANAGER }),
    );
  }

  createServiceAccount(account: V1ServiceAccount): Promise<V1ServiceAccount> {
    const { namespace, name } = placementOf(account.metadata, 'ServiceAccount');
    return writing(`create ServiceAccount ${namespace}/${name}`, () =>
      this.#apis.core.createNamespacedServiceAccount({
        namespace,
        body: account,
        fieldManager: FIELD_MANAGER,
      }),
    );
  }

  createLease(lease: V1Lease): Promise<V1Lease> {
    const { namespace, name } = placementOf(lease.metadata, 'Lease');
    return writing(`create Lease ${namespace}/${name}`, () =>
      this.#apis.coordination.createNamespacedLease({ namespace, body: lease, fieldManager: FIELD_MANAGER }),
    );
  }

  createRole(role: V1Role): Promise<V1Role> {
    const { namespace, name } = placementOf(role.metadata, 'Role');
    return writing(`create Role ${namespace}/${name}`, () =>
      this.#apis.rbac.createNamespacedRole({ namespace, body: role, fieldManager: FIELD_MANAGER }),
    );
  }

  createRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding> {
    const { namespace, name } = placementOf(binding.metadata, 'RoleBinding');
    return writing(`create RoleBinding ${namespace}/${name}`, () =>
      this.#apis.rbac.createNamespacedRoleBinding({ namespace, body: binding, fieldManager: FIELD_MANAGER }),
    );
  }

  replaceServiceAccount(account: V1ServiceAccount): Promise<V1ServiceAccount> {
    const { namespace, name } = placementOf(account.metadata, 'ServiceAccount');
    return writing(`replace ServiceAccount ${namespace}/${name}`, () =>
      this.#apis.core.replaceNamespacedServiceAccount({
        namespace,
        name,
        body: account,
        fieldManager: FIELD_MANAGER,
      }),
    );
  }

  replaceRole(role: V1Role): Promise<V1Role> {
    const { namespace, name } = placementOf(role.metadata, 'Role');
    return writing(`replace Role ${namespace}/${name}`, () =>
      this.#apis.rbac.replaceNamespacedRole({ namespace, name, body: role, fieldManager: FIELD_MANAGER }),
    );
  }

  replaceRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding> {
    const { namespace, name } = placementOf(binding.metadata, 'RoleBinding');
    return writing(`replace RoleBinding ${namespace}/${name}`, () =>
      this.#apis.rbac.replaceNamespacedRoleBinding({
        namespace,
        name,
        body: binding,
        fieldManager: FIELD_MANAGER,
      }),
    );
  }

  async createCustomObject(kind: CustomKind, object: NewCustomObject): Promise<CustomObject> {
    const { namespace, name } = object.metadata;
    const action = `create ${kind} ${namespace}/${name}`;
    const created: unknown = await writing(action, () =>
      this.#apis.custom.createNamespacedCustomObject({
        ...CUSTOM_RESOURCES[kind],
        namespace,
        body: object,
        fieldManager: FIELD_MANAGER,
      }),
    );
    return parseCustomObject(created, action);
  }

  async replaceStatus(kind: CustomKind, object: CustomObject): Promise<CustomObject> {
    const { namespace = '', name } = object.metadata;
    const action = `replace ${kind} ${namespace}/${name} status`;
    const written: unknown = await writing(action, () =>
      this.#apis.custom.replaceNamespacedCustomObjectStatus({
        ...CUSTOM_RESOURCES[kind],
        namespace,
        name,
        body: object,
        fieldManager: FIELD_MANAGER,
      }),
    );
    return parseCustomObject(written, action);
  }

  async patchStatus(
    kind: CustomKind,
    target: VersionedRef,
    status: Record<string, unknown>,
  ): Promise<CustomObject> {
    const action = `patch ${kind} ${target.namespace}/${target.name} status`;
    const written: unknown = await writing(action, () =>
      this.#apis.custom.patchNamespacedCustomObjectStatus(
        {
          ...CUSTOM_RESOURCES[kind],
          namespace: target.namespace,
          name: target.name,
          body: { metadata: { resourceVersion: target.resourceVersion }, status },
          fieldManager: FIELD_MANAGER,
        },
        mergePatch(),
      ),
    );
    return parseCustomObject(written, action);
  }

  async patchSpec(
    kind: CustomKind,
    target: VersionedRef,
    spec: Record<string, unknown>,
  ): Promise<CustomObject> {
    const action = `patch ${kind} ${target.namespace}/${target.name} spec`;
    const written: unknown = await writing(action, () =>
      this.#apis.custom.patchNamespacedCustomObject(
        {
          ...CUSTOM_RESOURCES[kind],
          namespace: target.namespace,
          name: target.name,
          body: { metadata: { resourceVersion: target.resourceVersion }, spec },
          fieldManager: FIELD_MANAGER,
        },
        mergePatch(),
      ),
    );
    return parseCustomObject(written, action);
  }

  async patchCustomMetadata(
    kind: CustomKind,
    target: VersionedRef,
    patch: MetadataPatch,
  ): Promise<CustomObject> {
    const action = `patch ${kind} ${target.namespace}/${target.name} metadata`;
    const written: unknown = await writing(action, () =>
      this.#apis.custom.patchNamespacedCustomObject(
        {
          ...CUSTOM_RESOURCES[kind],
          namespace: target.namespace,
          name: target.name,
          body: metadataPatchBody(target, patch),
          fieldManager: FIELD_MANAGER,
        },
        mergePatch(),
      ),
    );
    return parseCustomObject(written, action);
  }

  patchJobMetadata(target: VersionedRef, patch: MetadataPatch): Promise<V1Job> {
    return writing(`patch Job ${target.namespace}/${target.name} metadata`, () =>
      this.#apis.batch.patchNamespacedJob(
        {
          namespace: target.namespace,
          name: target.name,
          body: metadataPatchBody(target, patch),
          fieldManager: FIELD_MANAGER,
        },
        mergePatch(),
      ),
    );
  }

  patchSecretLabels(
    target: { namespace: string; name: string },
    labels: Record<string, string>,
  ): Promise<V1Secret> {
    return writing(`patch Secret ${target.namespace}/${target.name} labels`, () =>
      this.#apis.core.patchNamespacedSecret(
        {
          namespace: target.namespace,
          name: target.name,
          body: { metadata: { labels } },
          fieldManager: FIELD_MANAGER,
        },
        mergePatch(),
      ),
    );
  }

  deleteJob(namespace: string, name: string, preconditions: { uid?: string } = {}): Promise<DeleteResult> {
    // C13: without Background the Job's pods are orphaned (batch/v1 defaults to orphanDependents).
    return deleting(`delete Job ${namespace}/${name}`, () =>
      this.#apis.batch.deleteNamespacedJob({
        namespace,
        name,
        propagationPolicy: 'Background',
        body: { propagationPolicy: 'Background', preconditions },
      }),
    );
  }

  deleteSecret(namespace: string, name: string, preconditions: { uid?: string } = {}): Promise<DeleteResult> {
    return deleting(`delete Secret ${namespace}/${name}`, () =>
      this.#apis.core.deleteNamespacedSecret({
        namespace,
        name,
        propagationPolicy: 'Background',
        body: { propagationPolicy: 'Background', preconditions },
      }),
    );
  }

  deletePod(
    namespace: string,
    name: string,
    preconditions: { uid: string; resourceVersion: string },
  ): Promise<DeleteResult> {
    return deleting(`delete Pod ${namespace}/${name}`, () =>
      this.#apis.core.deleteNamespacedPod({ namespace, name, body: { preconditions } }),
    );
  }

  deleteLease(namespace: string, name: string): Promise<DeleteResult> {
    return deleting(`delete Lease ${namespace}/${name}`, () =>
      this.#apis.coordination.deleteNamespacedLease({ namespace, name }),
    );
  }

  deleteCustomObject(kind: CustomKind, namespace: string, name: string): Promise<DeleteResult> {
    return deleting(`delete ${kind} ${namespace}/${name}`, () =>
      this.#apis.custom.deleteNamespacedCustomObject({
        ...CUSTOM_RESOURCES[kind],
        namespace,
        name,
        propagationPolicy: 'Background',
      }),
    );
  }

  async removePodFinalizer(
    namespace: string,
    name: string,
    finalizer: string,
    resourceVersion?: string,
  ): Promise<FinalizerRemoval> {
    // `metadata.finalizers` merges by value in a strategic merge patch (ObjectMeta `patchStrategy=merge`):
    // this directive deletes our entry only, whatever the others and their order.
    const metadata = {
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      '$deleteFromPrimitiveList/finalizers': [finalizer],
    };
    try {
      await this.#apis.core.patchNamespacedPod(
        { namespace, name, body: { metadata }, fieldManager: FIELD_MANAGER },
        strategicMergePatch(),
      );
      return 'removed';
    } catch (error) {
      const normalised = toKubeError(error, `remove finalizer ${finalizer} from Pod ${namespace}/${name}`);
      if (isKubeError(normalised, 'NotFound')) return 'absent';
      throw normalised;
    }
  }

  async emitEvent(event: EventSpec): Promise<EmitResult> {
    const { namespace } = event.regarding;
    const name = eventNameOf(event.regarding, event.reason, event.transitionKey);
    const body: EventsV1Event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name, namespace },
      // MicroTime: the API server rejects eventTime without exactly six fractional digits, which a plain
      // Date (three digits) would send.
      eventTime: new V1MicroTime(this.#clock.nowMs()),
      type: event.type,
      reason: event.reason,
      action: event.action,
      note: event.note,
      regarding: event.regarding,
      related: event.related,
      reportingController: this.#reporter.controller,
      reportingInstance: this.#reporter.instance,
    };
    try {
      await this.#apis.events.createNamespacedEvent({ namespace, body });
      return 'created';
    } catch (error) {
      const normalised = toKubeError(error, `create Event ${namespace}/${name}`);
      if (isKubeError(normalised, 'AlreadyExists')) return 'already-emitted';
      throw normalised;
    }
  }
}
