import type { TargetSpec } from '../schemas/kinds/target.ts';
import { type RunEvent, runEvent } from './event-spec.ts';
import { stateSecretOf } from './run-secret-manifest.ts';

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

/** The state objects to clean up when the finalizer goes; undefined when the spec names its own backend. */
export function stateObjectsOf(
  spec: Pick<TargetSpec, 'backend'> | undefined,
  namespace: string,
  stateSuffix: string,
): StateObjects | undefined {
  if (spec === undefined || spec.backend !== undefined) return undefined;
  const state = stateSecretOf({ backend: undefined, namespace, stateSuffix });
  if (state === undefined) return undefined;
  return { namespace: state.namespace, stateSecret: state.name, lockLease: `lock-${state.name}` };
}

/** One entry of a Terraform state's `resources`, as far as counting needs it. */
interface StateResource {
  mode?: unknown;
  instances?: unknown;
}

/**
 * The managed resource instances a Terraform state (parsed JSON) records; undefined when it is not a state.
 * Data sources hold no infrastructure and are not counted.
 */
export function managedInstanceCount(state: unknown): number | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const resources = (state as { resources?: unknown }).resources;
  if (resources === undefined) return 0;
  if (!Array.isArray(resources)) return undefined;
  return (resources as StateResource[])
    .filter((resource) => resource?.mode === 'managed')
    .reduce((sum, resource) => sum + (Array.isArray(resource.instances) ? resource.instances.length : 0), 0);
}

/** What the state read found: no Secret, a Secret with no state yet, a count, or something unreadable. */
export type StateReading =
  | { kind: 'absent' }
  | { kind: 'counted'; managedInstances: number }
  | { kind: 'unreadable'; problem: string };

/** Delete the state objects, or keep them with the Event that says why. */
export type StateCleanup = { kind: 'delete' } | { kind: 'keep'; event: RunEvent };

/**
 * Deletes only a state that provably holds nothing (no Secret, or zero managed instances); anything else is
 * kept with a Warning Event naming the objects kept, so a person can look before removing them by hand.
 */
export function decideStateCleanup(objects: StateObjects, reading: StateReading): StateCleanup {
  if (reading.kind === 'absent' || (reading.kind === 'counted' && reading.managedInstances === 0))
    return { kind: 'delete' };
  const why =
    reading.kind === 'counted'
      ? `holds ${reading.managedInstances} resource instance(s)`
      : `could not be read (${reading.problem})`;
  return {
    kind: 'keep',
    event: runEvent('StateKept', {
      action: 'Finalize',
      note: `the state in Secret ${objects.stateSecret} ${why}: it and its lock Lease ${objects.lockLease} are kept; delete them by hand once nothing is left`,
      transitionKey: objects.stateSecret,
    }),
  };
}
