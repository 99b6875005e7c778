import type { TargetStatus } from '../../schemas/kinds/target.ts';
import { type RunEvent, runEvent } from '../event-spec.ts';
import { waitStatus } from '../move-status.ts';
import { FINALIZER } from '../preamble.ts';
import { decideStateCleanup, stateObjectsOf } from '../state-cleanup.ts';
import {
  ACCEPT_EMPTY_STATE_ANNOTATION,
  type StateContent,
  stateMayHoldResources,
  successRecorded,
} from '../state-evidence.ts';
import type { Planned } from '../step-plan.ts';
import { timestampMs } from '../views.ts';
import { waitFor } from '../wait-table.ts';
import { finish, planRest } from './assemble.ts';
import { type Base, outcome, waitOutcome } from './context.ts';
import { beforeStateRead } from './previous-attempt.ts';

/**
 * A deleting object with nothing left to destroy (DESIGN.md section 3 row 1): the finalizer goes, and the
 * default backend's state objects with it when the state holds nothing.
 */

/**
 * The newest successful destroy came after the newest successful apply (or no apply succeeded): what the
 * destroy left in the state is no managed resource, even where the controller cannot read it (encrypted).
 */
function destroyedAfterApply(status: TargetStatus): boolean {
  const destroyed = timestampMs(status.lastSuccess?.destroy);
  const applied = timestampMs(status.lastSuccess?.apply);
  return destroyed !== undefined && (applied === undefined || destroyed >= applied);
}

/** What a state that holds nothing is, as the Event says it. */
const HOLDS_NOTHING: Partial<Record<StateContent, string>> = {
  missing: 'does not exist',
  unwritten: 'was never written by OpenTofu',
  'no-resources': 'holds no managed resources',
};

/**
 * The Event of an object that goes without a destroy although Jobs of it ran (row 1: none succeeded and the
 * state provably holds nothing), so a person who looks for the destroy finds why there was none; undefined
 * for an object on which nothing ran, one whose destroy succeeded, and one whose lost state a person
 * accepted (its own `DestroySkipped` says so: its state may have held resources).
 */
function destroyNotNeeded(base: Base, stateSecret: string): RunEvent | undefined {
  const { planning, status } = base;
  const { snap, facts } = planning;
  // A Job deleted before it was bookkept leaves only its attempt, folded in as recorded (an attempt number
  // passed over for a predecessor's Job of the same name raises `last` only).
  const ran =
    status.lastRun !== undefined ||
    Object.values(status.attempts ?? {}).some((attempts) => (attempts?.recorded ?? 0) > 0);
  const content = facts.state;
  const holds = content === undefined ? undefined : HOLDS_NOTHING[content];
  if (!ran || successRecorded(status) || content === undefined || holds === undefined) return undefined;
  if (stateMayHoldResources(content, snap, status)) return undefined;
  return runEvent('DestroyNotNeeded', {
    action: 'Finalize',
    note: `no destroy ran: no Job of this object succeeded and its state Secret ${stateSecret} ${holds}, so nothing it could destroy exists`,
    transitionKey: stateSecret,
  });
}

/**
 * Cluster API pause holds a deletion as it holds a start (DESIGN.md section 5 step 2: a destroy or the
 * finalizer's removal wait on pause): the object waits `Paused` with its finalizer, and the lift (the
 * Cluster's or the object's event) lets it go. Only a copy `clusterctl move` deletes goes under it.
 * Undefined when nothing pauses the object.
 */
function pausedDeletion(base: Base): Planned | undefined {
  const { planning, status } = base;
  const { snap, facts } = planning;
  if (!snap.paused) return undefined;
  const wait = waitFor('Paused', {
    now: facts.now,
    uid: snap.uid,
    op: 'destroy',
    message: 'Cluster API pause is set; the object keeps its finalizer until the pause is lifted',
  });
  return planRest(base, waitStatus(planning.statusContext, status, wait), waitOutcome(base, wait));
}

/**
 * Row 1 of section 3: nothing to destroy, so the finalizer goes and the object with it. A copy `clusterctl
 * move` deletes leaves its state to clusterctl, which moved it and deletes the source's.
 */
export function planFinalize(
  base: Base,
  reason: 'DeletingWithoutState' | 'DeletingForMove' = 'DeletingWithoutState',
  message?: string,
): Planned {
  const { planning, status } = base;
  const { snap, facts } = planning;
  if (reason === 'DeletingForMove') {
    const finalizers = (snap.meta.finalizers ?? []).filter((f) => f !== FINALIZER);
    return finish(
      base,
      status,
      { kind: 'finalizers', finalizers, gone: true },
      outcome(planning, reason),
      false,
    );
  }
  const paused = pausedDeletion(base);
  if (paused !== undefined) return paused;
  // The state says what is left (only with the default backend and a spec that parses: otherwise the
  // state's home is unknown): a status that records no success may be a lost one (issue 23 item 5, decided
  // by decideOp once read), and the state objects nobody owns go with the finalizer when they hold nothing
  // (section 12, issue 23 item 3).
  const objects = stateObjectsOf(snap);
  if (objects !== undefined && facts.state === undefined)
    return beforeStateRead(base) ?? { kind: 'read', read: 'state' };
  const state =
    objects !== undefined && facts.state !== undefined
      ? { ...objects, cleanup: decideStateCleanup(objects, facts.state, destroyedAfterApply(status)) }
      : undefined;
  const finalizers = (snap.meta.finalizers ?? []).filter((f) => f !== FINALIZER);
  const notNeeded = state !== undefined ? destroyNotNeeded(base, state.stateSecret) : undefined;
  return finish(
    notNeeded ? { ...base, events: [...base.events, notNeeded] } : base,
    status,
    { kind: 'finalizers', finalizers, gone: true, ...(state ? { state } : {}) },
    outcome(planning, 'DeletingWithoutState', message !== undefined ? { message } : {}),
    false,
  );
}

/**
 * A deleting object whose lost state a person accepted (DESIGN.md section 3): a destroy from an empty state
 * destroys nothing, so the finalizer goes without a Job (none can be created in a namespace being deleted,
 * where this is most often met), the state's leftovers with it, and a Warning Event and the step's
 * message say what stays.
 * `stateSecret` is the lost Secret's name, `provisioned` the field that shows the object was provisioned.
 */
export function planFinalizeLostState(base: Base, stateSecret: string, provisioned: string): Planned {
  // A pod of an earlier attempt may still write the state the person accepted as lost. Under pause nothing
  // is said to have gone (the start's gates hold a paused object before it gets here).
  const held = beforeStateRead(base) ?? pausedDeletion(base);
  if (held !== undefined) return held;
  const note = `no destroy ran: ${provisioned} shows the object was provisioned, its state Secret ${stateSecret} is lost and ${ACCEPT_EMPTY_STATE_ANNOTATION} accepts it; what that state managed stays until removed by hand`;
  const skipped = runEvent('DestroySkipped', { action: 'Finalize', note, transitionKey: stateSecret });
  // The log line says it too: in a namespace being deleted the Event is refused like every create.
  return planFinalize({ ...base, events: [...base.events, skipped] }, 'DeletingWithoutState', note);
}
