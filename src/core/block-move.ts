import type { Move } from './step-plan.ts';

/**
 * Cluster API's move contract (clusterctl's provider contract, "Move"): `clusterctl move` pauses the Cluster,
 * then waits, before it creates anything in the target management cluster, until no object it moves carries
 * the annotation `clusterctl.cluster.x-k8s.io/block-move`. A paused object of ours starts no Job, but a Job
 * already running cannot be paused: it must finish and be bookkept in the source, or the target would start
 * a second run on the same state (and the source's finished Job would never be read). So an object carries
 * the annotation from just before its Job is created until the step that bookkeeps that Job.
 *
 * The annotation is metadata: a status write (the status subresource) cannot carry it, so adding it is one
 * merge patch before the Job's create (with the `captf.io/accept-empty-state` removal when that start spends
 * it) and removing it one more after the bookkeeping's marks (with the finalizer patch when that goes too).
 * A step whose object already carries what it should writes nothing: the decision reads the annotation of
 * the object the step read anyway.
 */
export const BLOCK_MOVE_ANNOTATION = 'clusterctl.cluster.x-k8s.io/block-move';

/** What the step does with the annotation: add it, remove it, or leave it as it is. */
export type BlockMoveChange = 'add' | 'remove' | undefined;

/**
 * Whether the object should carry the annotation once the step's move is done: while a Job of it runs
 * (`start` creates one, `watch` shows one running), not once nothing runs (`rest`: every finished Job this
 * step read is bookkept; `delete-job`: the Job goes; our finalizer goes: in the same write, for an object
 * another finalizer keeps). `none` (not ours, left alone, a status that does not parse: nothing is
 * bookkept) and the first step's finalizer (no Job yet) change nothing.
 */
export function blockMoveWanted(move: Move): boolean | undefined {
  switch (move.kind) {
    case 'start':
    case 'watch':
      return true;
    case 'rest':
    case 'delete-job':
      return false;
    case 'finalizers':
      return move.gone ? false : undefined;
    case 'none':
      return undefined;
  }
}

/** The change that makes `present` what `wanted` says; undefined when it already is, or when nothing is wanted. */
export function blockMoveChange(present: boolean, wanted: boolean | undefined): BlockMoveChange {
  if (wanted === undefined || wanted === present) return undefined;
  return wanted ? 'add' : 'remove';
}

/** Whether `annotations` carry the annotation (any value counts, as clusterctl reads it). */
export function carriesBlockMove(annotations: Readonly<Record<string, string>> | undefined): boolean {
  return annotations?.[BLOCK_MOVE_ANNOTATION] !== undefined;
}
