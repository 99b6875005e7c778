import type { TargetStatus } from '../schemas/kinds/target.ts';
import { stateSecretOf } from './run-secret-manifest.ts';
import type { Snapshot } from './snapshot.ts';
import { snapshotStateSuffix } from './state-identity.ts';

/**
 * Lost state (issue 23 item 5; DESIGN.md sections 3 and 6): an object that shows it was provisioned but whose
 * state Secret is gone or was never written (a restore without its Secrets) must not apply from nothing,
 * which would build its infrastructure a second time; it waits `StateMissing` until a person sets
 * {@link ACCEPT_EMPTY_STATE_ANNOTATION}. A deleting object that records no success destroys when its state
 * may hold resources (its status was lost, not its infrastructure), and goes without a destroy when the state
 * provably holds nothing (`stateMayHoldResources`). The state is read only for those two
 * decisions (the planner's `state` fact), never on a step that does not take one of them.
 */

/**
 * What the kubernetes backend's state Secret holds (src/step/state-content.ts reads it): no Secret; a Secret
 * OpenTofu never wrote (no `tfstate` key: the placeholder the runner identity creates); a state OpenTofu
 * wrote that holds no managed resource instance; one that holds some; one OpenTofu wrote encrypted (issue 25
 * item 3: its resources are ciphertext, and the controller holds no passphrase, so whether it holds any is
 * unknown); one that cannot be read.
 */
export type StateContent =
  | 'missing'
  | 'unwritten'
  | 'no-resources'
  | 'resources'
  | 'encrypted'
  | 'unreadable';

/**
 * Set by a person on an object waiting `StateMissing`: the next apply may start from an empty state. The
 * step removes it as it starts that apply, so it accepts one start, not every later loss of the state.
 */
export const ACCEPT_EMPTY_STATE_ANNOTATION = 'captf.io/accept-empty-state';

/**
 * The state Secret the checks read: only with the default backend (no `spec.backend`, or the kubernetes
 * type with neither config nor a Secret), since any other setting may keep the state somewhere this API
 * server cannot see, and a Secret not found there proves nothing.
 */
export function checkedStateSecret(snap: Snapshot): { namespace: string; name: string } | undefined {
  const backend = snap.spec?.backend;
  if (snap.spec === undefined) return undefined;
  if (backend !== undefined && (backend.type !== 'kubernetes' || backend.config || backend.secretRef))
    return undefined;
  const where = stateSecretOf({
    backend: undefined,
    namespace: snap.ref.namespace,
    stateSuffix: snapshotStateSuffix(snap),
  });
  return where === undefined ? undefined : { namespace: where.namespace, name: where.name };
}

/**
 * The field that shows the object was provisioned, if one does: a recorded successful apply, or a Cluster
 * API contract field only a module output fills (the spec survives a restore even when the status does not).
 * A cluster's `spec.controlPlaneEndpoint` is no such proof: a person may set it before the first apply (an
 * address in front of the control plane, docs/module-contract.md), and a new cluster would then wait
 * `StateMissing` for a state it never had.
 */
export function provisionedBy(snap: Snapshot, status: TargetStatus): string | undefined {
  if (status.lastSuccess?.apply !== undefined) return 'status.lastSuccess.apply';
  const spec = snap.spec;
  if (spec?.providerID) return 'spec.providerID';
  if ((spec?.providerIDList?.length ?? 0) > 0) return 'spec.providerIDList';
  if (status.ready === true) return 'status.ready';
  return undefined;
}

/**
 * Whether the state holds nothing to destroy: no Secret, one never written, or one without resources. An
 * encrypted state is never proof of nothing: a deleting object that records no success destroys it (the
 * destroy Job opens it with the passphrase).
 */
export function stateHoldsNothing(content: StateContent): boolean {
  return content === 'missing' || content === 'unwritten' || content === 'no-resources';
}

/**
 * Whether a deleting object that records no successful apply or destroy may leave something a destroy would
 * remove (DESIGN.md section 3 row 1): a state holding resources, or one the controller cannot look into; and
 * a lost state (no Secret, or one OpenTofu never wrote) of an object that shows it was provisioned, so the
 * destroy path asks a person (`StateMissing`) instead of letting the infrastructure go unseen. False, whatever
 * Jobs ran before, for a state OpenTofu wrote without resources, and for a lost one of an object that shows
 * no provisioning.
 */
export function stateMayHoldResources(content: StateContent, snap: Snapshot, status: TargetStatus): boolean {
  if (!stateHoldsNothing(content)) return true;
  return stateLost(content) && provisionedBy(snap, status) !== undefined;
}

/**
 * Whether a provisioned object's state is lost: no Secret, or one OpenTofu never wrote (what a restore without
 * its Secrets leaves once the runner identity puts the placeholder back). A state OpenTofu wrote is never
 * lost, even without resources: a module may manage none (outputs, data sources only), and holding such an
 * object back at every apply would freeze it for good.
 */
export function stateLost(content: StateContent): boolean {
  return content === 'missing' || content === 'unwritten';
}

/**
 * Whether the status records a successful apply or destroy (section 3 row 1: without one, a deleting
 * object's state is read before a destroy starts or the finalizer goes).
 */
export function successRecorded(status: TargetStatus): boolean {
  return status.lastSuccess?.apply !== undefined || status.lastSuccess?.destroy !== undefined;
}

/** Whether the object carries the person's consent to apply from an empty state. */
export function acceptsEmptyState(snap: Snapshot): boolean {
  return snap.meta.annotations?.[ACCEPT_EMPTY_STATE_ANNOTATION] !== undefined;
}
