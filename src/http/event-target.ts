import { LABELS } from '../core/job-labels.ts';
import { OBJECT_KINDS, type ObjectRef } from '../core/object-ref.ts';
import { ALL_NAMESPACES, type WatchNamespaces, watchesNamespace } from '../core/watch-scope.ts';
import type { EventSubject } from '../schemas/cloudevents.ts';
import { API_GROUP, isTargetKind } from '../schemas/kinds/api-group.ts';
import type { ObjectVersion } from '../settle/ports.ts';
import type { OwnedKind } from './deps.ts';

/**
 * Which object an event is about (DESIGN.md section 13): our kinds map to themselves; Jobs, Pods and
 * TerraformPlans map to their owner through the `captf.io/owner-kind`/`owner-name` labels or a
 * controlling owner reference when the payload has them, else through a live read; Cluster API's Machines
 * and MachinePools to the object their infrastructure reference names (a live read), and a Cluster to the
 * objects of its cluster whose status it has outdated. Pure.
 */

const OUR_GROUP = API_GROUP;
const CLUSTER_API_GROUP = 'cluster.x-k8s.io';

/** Owned kinds and the API group each must come from ('' is the core group). */
const OWNED_GROUPS: Readonly<Record<OwnedKind, string>> = {
  Job: 'batch',
  Pod: '',
  TerraformPlan: OUR_GROUP,
  Machine: CLUSTER_API_GROUP,
  MachinePool: CLUSTER_API_GROUP,
};

/** Cluster API's objects name ours in their spec, which the payload does not keep: always read live. */
const READ_LIVE: ReadonlySet<OwnedKind> = new Set(['Machine', 'MachinePool']);

/** Where an event leads. */
export type EventTarget =
  | { kind: 'object'; ref: ObjectRef; reason: 'OurKind' | 'OwnerLabels' | 'OwnerReference' }
  | {
      kind: 'lookup';
      owned: { kind: OwnedKind; namespace: string; name: string };
      reason: 'NoOwnerInPayload';
    }
  | { kind: 'cluster'; cluster: { namespace: string; name: string }; reason: 'ClusterApiCluster' }
  | { kind: 'ignored'; reason: 'NotManaged' | 'NamespaceNotWatched' }
  | { kind: 'unsupported'; reason: 'UnknownKind'; message: string };

/**
 * Maps an event subject to its target; an object in a namespace outside `watched` (its owner lives in the
 * same namespace) is ignored, whatever its kind.
 */
export function targetOf(subject: EventSubject, watched: WatchNamespaces = ALL_NAMESPACES): EventTarget {
  if (!watchesNamespace(watched, subject.namespace))
    return { kind: 'ignored', reason: 'NamespaceNotWatched' };
  const group = groupOf(subject.apiVersion);
  if (group === OUR_GROUP && isTargetKind(subject.kind)) {
    return {
      kind: 'object',
      ref: { kind: subject.kind, namespace: subject.namespace, name: subject.name },
      reason: 'OurKind',
    };
  }
  if (group === CLUSTER_API_GROUP && subject.kind === 'Cluster') {
    return {
      kind: 'cluster',
      cluster: { namespace: subject.namespace, name: subject.name },
      reason: 'ClusterApiCluster',
    };
  }
  const owned = ownedKindOf(subject.kind, group);
  if (owned === undefined) {
    return {
      kind: 'unsupported',
      reason: 'UnknownKind',
      message: `route event: unknown kind ${subject.kind.slice(0, 63)} (${subject.apiVersion.slice(0, 80)}); expected one of ${[...OBJECT_KINDS, ...Object.keys(OWNED_GROUPS), 'Cluster'].join(', ')}`,
    };
  }
  if (subject.mode === 'ref' || subject.labels === undefined || READ_LIVE.has(owned)) {
    return {
      kind: 'lookup',
      owned: { kind: owned, namespace: subject.namespace, name: subject.name },
      reason: 'NoOwnerInPayload',
    };
  }
  const ownerKind = subject.labels[LABELS.ownerKind];
  const ownerName = subject.labels[LABELS.ownerName];
  if (isTargetKind(ownerKind) && ownerName !== undefined) {
    return {
      kind: 'object',
      ref: { kind: ownerKind, namespace: subject.namespace, name: ownerName },
      reason: 'OwnerLabels',
    };
  }
  const ownerRef = subject.ownerReferences?.find(
    (ref) => groupOf(ref.apiVersion) === OUR_GROUP && isTargetKind(ref.kind),
  );
  if (ownerRef !== undefined && isTargetKind(ownerRef.kind)) {
    return {
      kind: 'object',
      ref: { kind: ownerRef.kind, namespace: subject.namespace, name: ownerRef.name },
      reason: 'OwnerReference',
    };
  }
  // A Pod owned by a Job carries our labels only through its Job, and a TerraformPlan names
  // its target in spec.targetRef: read them live.
  if (subject.labels[LABELS.managed] === 'true' || owned === 'TerraformPlan') {
    return {
      kind: 'lookup',
      owned: { kind: owned, namespace: subject.namespace, name: subject.name },
      reason: 'NoOwnerInPayload',
    };
  }
  return { kind: 'ignored', reason: 'NotManaged' };
}

/** The dedupe key `uid@resourceVersion`, when the payload has both (resource mode only). */
export function dedupeKeyOf(subject: EventSubject): ObjectVersion | undefined {
  return subject.uid !== undefined && subject.resourceVersion !== undefined
    ? { uid: subject.uid, resourceVersion: subject.resourceVersion }
    : undefined;
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

function ownedKindOf(kind: string, group: string): OwnedKind | undefined {
  if (!Object.hasOwn(OWNED_GROUPS, kind)) return undefined;
  const owned = kind as OwnedKind;
  return OWNED_GROUPS[owned] === group ? owned : undefined;
}
