import type { ObjectKind } from './object-ref.ts';

/**
 * What Cluster API tells a step about the object it drives (DESIGN.md section 2, issue 11; CAPI's v1beta2
 * InfraMachine and InfraMachinePool contracts): the owner CAPI sets (a Machine for a TerraformMachine, a
 * MachinePool for a TerraformMachinePool), whether the Cluster's infrastructure is provisioned, and the
 * bootstrap data. A TerraformMachine nobody owns and nobody cloned from a template runs standalone, as
 * without Cluster API. Plain data read by src/step/read.ts; the rules here are pure.
 */

/** The Cluster API owner of a machine or pool, as far as its module inputs and waits need it. */
export interface CapiOwner {
  kind: 'Machine' | 'MachinePool';
  name: string;
  /** `spec.version` (Machine) or `spec.template.spec.version` (MachinePool): the Kubernetes version. */
  version?: string;
  /** A control-plane machine: the Machine carries the label `cluster.x-k8s.io/control-plane`. */
  controlPlane: boolean;
  /** `spec.failureDomain` (Machine) or `spec.failureDomains` joined by commas (MachinePool). */
  failureDomain?: string;
  /** `bootstrap.dataSecretName`: set by the bootstrap provider once the data exists. */
  bootstrapDataSecretName?: string;
  /** `spec.replicas` of a MachinePool. */
  replicas?: number;
}

/** `format` of bootstrap data whose Secret has no `format` key: Cluster API's default. */
export const DEFAULT_BOOTSTRAP_FORMAT = 'cloud-config';

/** The bootstrap data Secret's `value` and `format` keys (CAPI's BootstrapConfig data secret contract). */
export interface BootstrapData {
  value: string;
  /** `cloud-config` when the Secret has no `format` key (Cluster API's default). */
  format: string;
}

/** Cluster API's view of one object. */
export interface CapiContext {
  owner?: CapiOwner;
  /**
   * Cluster API drives the object but its owner cannot be read: it was cloned from a template (annotation
   * `cluster.x-k8s.io/cloned-from-name`) and the owner reference is still coming, or the owner it names is
   * gone. It must not run before the owner is there.
   */
  expectsOwner: boolean;
  /**
   * `Cluster.status.initialization.infrastructureProvisioned` of the object's Cluster API Cluster; undefined
   * when there is no Cluster.
   */
  clusterInfrastructureProvisioned?: boolean;
  /** The data of `owner.bootstrapDataSecretName`; undefined while it is unset or the Secret is missing. */
  bootstrapData?: BootstrapData;
}

/** Annotation Cluster API puts on an object it cloned from a template. */
export const CLONED_FROM_NAME_ANNOTATION = 'cluster.x-k8s.io/cloned-from-name';
/** Cluster API's pause annotation on any object (DESIGN.md section 2), beside `Cluster.spec.paused`. */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';
/** Label of a control-plane Machine. */
export const CONTROL_PLANE_LABEL = 'cluster.x-k8s.io/control-plane';

/** The owner kind Cluster API sets on each of our kinds; a TerraformCluster's owner is the Cluster. */
export const CAPI_OWNER_KIND: Readonly<Partial<Record<ObjectKind, CapiOwner['kind']>>> = {
  TerraformMachine: 'Machine',
  TerraformMachinePool: 'MachinePool',
};

/**
 * Whether Cluster API drives the object: a machine or pool it owns, cloned or labelled for (a
 * {@link CapiContext}), or a TerraformCluster a Cluster owns (an owner reference of Cluster API's group).
 * Such an object's contract fields, once set, are Cluster API's: `spec.providerID` and
 * `spec.controlPlaneEndpoint` are never changed by a later run.
 */
export function drivenByClusterApi(object: { capi?: CapiContext; ownedByClusterApi?: boolean }): boolean {
  return object.capi !== undefined || object.ownedByClusterApi === true;
}

/** A Cluster API wait: the reason the object does not run yet, in one stable sentence. */
export interface CapiWait {
  reason: 'WaitingForOwner' | 'WaitingForClusterInfrastructure' | 'WaitingForBootstrapData';
  message: string;
}

/**
 * Why a machine or pool driven by Cluster API may not apply yet, in CAPI's order (owner, then the cluster's
 * infrastructure, then bootstrap data); undefined when it may. Destroys never wait for any of these.
 */
export function capiWait(kind: ObjectKind, capi: CapiContext | undefined): CapiWait | undefined {
  const ownerKind = CAPI_OWNER_KIND[kind];
  if (capi === undefined || ownerKind === undefined) return undefined;
  const owner = capi.owner;
  if (owner === undefined) {
    return capi.expectsOwner
      ? {
          reason: 'WaitingForOwner',
          message: `Cluster API drives this object; it waits for its ${ownerKind} owner`,
        }
      : undefined;
  }
  if (capi.clusterInfrastructureProvisioned !== true) {
    return {
      reason: 'WaitingForClusterInfrastructure',
      message: `the Cluster API Cluster of ${owner.kind} ${owner.name} has no provisioned infrastructure yet`,
    };
  }
  if (owner.bootstrapDataSecretName === undefined) {
    return {
      reason: 'WaitingForBootstrapData',
      message: `${owner.kind} ${owner.name} has no bootstrap data yet (spec.bootstrap.dataSecretName is unset)`,
    };
  }
  if (capi.bootstrapData === undefined) {
    return {
      reason: 'WaitingForBootstrapData',
      message: `the bootstrap data Secret ${owner.bootstrapDataSecretName} of ${owner.kind} ${owner.name} does not exist or has no value key`,
    };
  }
  return undefined;
}

/** What a Cluster API Cluster says to every object of its cluster: pause and the infrastructure state. */
export interface CapiClusterView {
  /** `spec.paused`. */
  paused: boolean;
  /** `status.initialization.infrastructureProvisioned`. */
  infrastructureProvisioned: boolean;
}

/** One object of a Cluster API cluster (label `cluster.x-k8s.io/cluster-name`), as the last step left it. */
export interface ClusterMemberView<R> {
  ref: R;
  /** The object's own pause annotation (`cluster.x-k8s.io/paused`). */
  pausedAnnotation: boolean;
  /** The status of its `Paused` condition; undefined before its first step. */
  pausedCondition?: string;
  /** `status.waitReason`. */
  waitReason?: string;
}

/**
 * The objects a Cluster's change must reach at once (CAPI providers watch their Cluster for pause
 * transitions and infrastructure provisioned): those whose status no longer matches it, a `Paused`
 * condition other than the pause now in force, or a wait for the Cluster's infrastructure that is now
 * provisioned. Judged from state, not from the change, so an event replayed or delivered twice wakes
 * nobody once the objects have caught up; an object never stepped has its own creation event.
 */
export function clusterMembersToWake<R>(
  cluster: CapiClusterView,
  members: readonly ClusterMemberView<R>[],
): R[] {
  return members
    .filter((member) => {
      const paused = member.pausedAnnotation || cluster.paused;
      const shownPaused = member.pausedCondition === 'True';
      if (member.pausedCondition !== undefined && shownPaused !== paused) return true;
      if (member.waitReason === 'Paused' && !paused) return true;
      return (
        member.waitReason === 'WaitingForClusterInfrastructure' &&
        cluster.infrastructureProvisioned &&
        !paused
      );
    })
    .map((member) => member.ref);
}
