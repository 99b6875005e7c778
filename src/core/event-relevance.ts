import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import { podPullFailure } from './classify.ts';
import { finishedCondition } from './job-conditions.ts';
import { ANNOTATIONS, LABELS } from './job-labels.ts';
import { isOrphanToDelete } from './orphaned-pods.ts';
import { heldPodOf } from './pod-release.ts';
import type { JobView, PodView } from './views.ts';

/**
 * What an event's own copy of an object says before any read (DESIGN.md sections 1 and 13): whether the
 * step could decide anything new from it. The copy only ever says "nothing to do": a step that has
 * something to do reads live first (section 5 step 2), so a stale copy can delay a step, never steer one.
 * Pure.
 */

/** Why an event about one of our Jobs or pods starts no step. */
export type QuietReason = 'JobRunning' | 'JobBookkept' | 'PodUneventful';

/** An owned object's event: a step to run, or why none is needed. */
export type OwnedEventVerdict = { matters: true } | { matters: false; reason: QuietReason };

/**
 * An event about one of our Jobs, judged from its copy. The step reads a Job's end (its Complete or
 * Failed condition, until bookkeeping marks it), its deletion and its disappearance; the status changes
 * of a running Job (active, ready, start time) and the echo of the bookkeeping mark change none of them.
 * The time a running Job may take is the step's own requeue (section 5 step 4), not an event's.
 */
export function jobEventVerdict(verb: 'add' | 'update' | 'delete', job: JobView): OwnedEventVerdict {
  if (verb === 'delete' || job.metadata.deletionTimestamp !== undefined) return { matters: true };
  if (finishedCondition(job) === undefined) return { matters: false, reason: 'JobRunning' };
  if (job.metadata.annotations?.[ANNOTATIONS.bookkept] === 'true')
    return { matters: false, reason: 'JobBookkept' };
  return { matters: true };
}

/** An event carries no Job list: an orphaned pod is judged as if its Job were gone. */
const NO_JOBS: ReadonlySet<string> = new Set();

/** The waiting reason the step records for a pod that cannot start (src/core/watch.ts). */
const CONFIG_ERROR = 'CreateContainerConfigError';

/**
 * An event about one of our pods, judged from its copy. The step reads a pod for three things: a pod
 * being deleted while it holds our finalizer (released at once, section 7), a pod that cannot start (an
 * image that cannot be pulled, a configuration error: the waiting reason on the object's status), and a
 * pod that is gone, which may end a WaitingForPreviousAttempt (the API guard, section 5 step 7): when its
 * Job was deleted, no Job event follows the pod's end. So does an orphaned pod that no longer runs (its Job
 * deleted with orphaning, src/core/orphaned-pods.ts): the wait for it ends now, and the step that reads it
 * deletes it. A pod's end otherwise reaches the step through its Job's condition, which the Job's own event
 * carries.
 */
export function podEventVerdict(verb: 'add' | 'update' | 'delete', pod: PodView): OwnedEventVerdict {
  if (verb === 'delete') return { matters: true };
  if (isOrphanToDelete(pod, NO_JOBS)) return { matters: true };
  if (heldPodOf(pod.metadata) !== undefined) return { matters: true };
  if (podPullFailure(pod) !== undefined) return { matters: true };
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  if (statuses.some((status) => status.state?.waiting?.reason === CONFIG_ERROR)) return { matters: true };
  return { matters: false, reason: 'PodUneventful' };
}

/** One version of one of our objects as the events route remembers it: who, which version, what content. */
export interface SeenObject {
  uid: string;
  resourceVersion: string;
  /** objectDigest of that version. */
  digest: string;
}

/** An object as an event or a GET carries it; only the fields below are read. */
export interface DigestedObject {
  metadata?: {
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: unknown;
    ownerReferences?: unknown;
  };
  spec?: unknown;
  status?: unknown;
}

/**
 * SHA-256 over what a step of ours reads of its object (src/step/read.ts): generation, spec, status,
 * annotations, finalizers, deletion, owner references and the Cluster API cluster label. Left out: the
 * resourceVersion, managedFields (read only when the spec changed, which moves the generation) and every
 * other label, so a label a person adds or a no-op apply changes nothing.
 */
export function objectDigest(object: DigestedObject): string {
  const meta = object.metadata ?? {};
  const read = {
    generation: meta.generation ?? 0,
    clusterName: meta.labels?.[LABELS.clusterName] ?? null,
    annotations: meta.annotations ?? {},
    finalizers: meta.finalizers ?? [],
    deletionTimestamp: meta.deletionTimestamp === undefined ? null : String(meta.deletionTimestamp),
    ownerReferences: meta.ownerReferences ?? [],
    spec: object.spec ?? null,
    status: object.status ?? null,
  };
  return createHash('sha256').update(canonicalJson(read)).digest('hex');
}

/**
 * The order of two resourceVersions of one object: negative when `a` is older, 0 when equal, positive when
 * newer; undefined when they cannot be compared. Kubernetes calls them opaque, but every API server backed
 * by etcd writes the store's revision, a decimal integer that only grows (Kubernetes 1.35 makes comparing
 * them part of the API: KEP-5504); anything else is not compared.
 */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!/^[1-9][0-9]{0,19}$/.test(a) || !/^[1-9][0-9]{0,19}$/.test(b)) return a === b ? 0 : undefined;
  const x = BigInt(a);
  const y = BigInt(b);
  return x === y ? 0 : x < y ? -1 : 1;
}

/** What an event's copy of one of our objects is, against the newest version already handled. */
export type ObjectEventVerdict =
  /** Nothing handled yet, another object of the name, or a version with new content: a step. */
  | { kind: 'changed' }
  /** The very version already handled. */
  | { kind: 'duplicate' }
  /** Older than a version already handled: out of order, or a replay. */
  | { kind: 'stale' }
  /** Newer, but what a step reads of it is what the handled version had: a label, a no-op apply. */
  | { kind: 'unchanged' };

/**
 * Judges an event's copy against the newest version of the object a step (or this judgement) already
 * handled. Only a comparable, same-UID version can end without a step; everything else is `changed`.
 */
export function objectEventVerdict(event: SeenObject, newest: SeenObject | undefined): ObjectEventVerdict {
  if (newest === undefined || newest.uid !== event.uid) return { kind: 'changed' };
  const order = compareResourceVersions(event.resourceVersion, newest.resourceVersion);
  if (order === undefined) return { kind: 'changed' };
  if (order === 0) return { kind: 'duplicate' };
  if (order < 0) return { kind: 'stale' };
  return event.digest === newest.digest ? { kind: 'unchanged' } : { kind: 'changed' };
}
