import { type RunEvent, runEvent } from './event-spec.ts';
import type { Snapshot } from './snapshot.ts';
import { checkedStateSecret, type StateContent, stateHoldsNothing } from './state-evidence.ts';

/**
 * What becomes of an object's Terraform state when its finalizer goes (issue 23 item 3, DESIGN.md section
 * 12). The state Secret and its lock Lease are not owned by the object, so they survive `clusterctl move` and
 * a restore from a backup (src/core/state-identity.ts); nothing else deletes them. So the step that removes
 * our finalizer deletes them first when the state holds no managed resource (a destroy that succeeded, or an
 * object that never ran), and keeps them, saying so, when it still does. Only for the default backend: a
 * `spec.backend` the user names is the user's. The runner identity and the plan key are owned by the object:
 * the garbage collector removes them.
 */

/** The default backend's objects of one object's state. */
export interface StateObjects {
  namespace: string;
  /** `tfstate-default-<suffix>`. */
  stateSecret: string;
  /** `lock-tfstate-default-<suffix>`: the backend's lock, named after the Secret. */
  lockLease: string;
}

/**
 * The state objects to clean up when the finalizer goes: those of the default backend
 * (src/core/state-evidence.ts `checkedStateSecret`); undefined when the spec names its own backend or does
 * not parse (the state's home is then unknown).
 */
export function stateObjectsOf(snap: Snapshot): StateObjects | undefined {
  const state = checkedStateSecret(snap);
  if (state === undefined) return undefined;
  return { namespace: state.namespace, stateSecret: state.name, lockLease: `lock-${state.name}` };
}

/** Delete the state objects, or keep them with the Event that says why. */
export type StateCleanup = { kind: 'delete' } | { kind: 'keep'; event: RunEvent };

/**
 * Deletes only a state that provably holds nothing (no Secret, one never written, or one without managed
 * resource instances), or an encrypted one whose object's newest destroy succeeded after its newest apply
 * (`destroyed`: OpenTofu's own destroy, which opened it with the passphrase, left no managed resource in it;
 * the controller cannot look inside, issue 25 item 3); anything else is kept with a Warning Event naming the
 * objects kept, so a person can look before removing them by hand.
 */
export function decideStateCleanup(
  objects: StateObjects,
  content: StateContent,
  destroyed = false,
): StateCleanup {
  if (stateHoldsNothing(content)) return { kind: 'delete' };
  if (content === 'encrypted' && destroyed) return { kind: 'delete' };
  const why =
    content === 'resources'
      ? 'holds managed resource instances'
      : content === 'encrypted'
        ? 'is encrypted and no destroy of it succeeded, so what it holds is unknown'
        : 'could not be read';
  return {
    kind: 'keep',
    event: runEvent('StateKept', {
      action: 'Finalize',
      note: `the state in Secret ${objects.stateSecret} ${why}: it and its lock Lease ${objects.lockLease} are kept; delete them by hand once nothing is left`,
      transitionKey: objects.stateSecret,
    }),
  };
}
