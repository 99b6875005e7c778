import { API_VERSION } from '../../schemas/kinds/api-group.ts';
import { jobsPolicyProblems } from '../../schemas/kinds/jobs-policy.ts';
import type { TargetStatus } from '../../schemas/kinds/target.ts';
import type { Op } from '../../schemas/result.ts';
import { nextAttemptOf, withStarted } from '../attempts.ts';
import type { RetryState } from '../backoff.ts';
import { capiWait } from '../cluster-api.ts';
import { findCondition, OP_CONDITION } from '../conditions.ts';
import type { StartDecision } from '../decide.ts';
import { runEvent } from '../event-spec.ts';
import { applyGates, type GateInput } from '../gates.ts';
import { buildJobManifest } from '../job-manifest.ts';
import { staleLockToUnlock } from '../lock-evidence.ts';
import { activeStatus, type StatusContext, waitStatus } from '../move-status.ts';
import { freeJobName } from '../names.ts';
import { buildOutputsSecret } from '../outputs-secret.ts';
import { mayHavePods } from '../pods.ts';
import { decisionAnnotations, type RunDecisions } from '../run-decisions.ts';
import { type RunInputs, resolveRunInputs, snapshotRedactor } from '../run-inputs.ts';
import { runnerAccountOf } from '../runner-identity.ts';
import { fullSlotScopes, type SlotScope } from '../slot-shares.ts';
import type { Snapshot } from '../snapshot.ts';
import {
  ACCEPT_EMPTY_STATE_ANNOTATION,
  acceptsEmptyState,
  checkedStateSecret,
  provisionedBy,
  stateLost,
} from '../state-evidence.ts';
import { outcomeOf, type StepOutcome } from '../step-outcome.ts';
import type { HeldWait, Planned, PlannedStart } from '../step-plan.ts';
import { type NotOptedIn, notOptedInEvent } from '../variables-opt-in.ts';
import { type WaitDecision, waitFor } from '../wait-table.ts';
import { fullJobSlotSources, runLeasesSource } from '../wake.ts';
import { finish, planRest } from './assemble.ts';
import {
  type Base,
  guardOf,
  lastJob,
  outcome,
  pausedStatus,
  pausedStatusOf,
  secretWaitOf,
  waitOutcome,
} from './context.ts';
import { planFinalizeLostState } from './finalize.ts';
import { previousAttemptWait } from './previous-attempt.ts';

/**
 * Starting a Job (DESIGN.md section 5 steps 5 to 8): the gates, the API guard, the inputs, the name and the
 * Job's manifest; and the wait its guards may still impose at perform time ({@link heldOutcome}).
 */

/** The gates, then the start (DESIGN.md section 5 steps 5 to 8). */
export function planStart(base: Base, decision: StartDecision, retries: RetryState): Planned {
  const { planning } = base;
  const { snap, facts, policy } = planning;
  const op = decision.op;
  const cluster = snap.owningCluster;
  // Machines and pools build on their cluster's infrastructure, and under Cluster API on their owner and
  // bootstrap data; a destroy never waits for any of it.
  const capiHold = op === 'destroy' ? undefined : capiWait(snap.ref.kind, snap.capi);
  // A cluster whose spec or status does not parse holds every op, a destroy too: its defaults are the
  // Jobs policy of the machine's runs (issue 23).
  const dependencies: GateInput['dependencies'] = cluster?.unreadable
    ? {
        ready: false,
        message: `TerraformCluster ${cluster.name} has fields that do not parse: ${cluster.unreadable.join(', ')}`,
      }
    : capiHold
      ? { ready: false, reason: capiHold.reason, message: capiHold.message }
      : op !== 'destroy' && cluster !== undefined && !cluster.ready
        ? { ready: false, message: `TerraformCluster ${cluster.name} is not ready yet` }
        : { ready: true };
  const gateInput = (slots: { installation: number; cluster: number }): GateInput => ({
    now: facts.now,
    uid: snap.uid,
    inputsHash: snap.inputsHash,
    records: base.records,
    retries,
    failedJobsHistoryLimit: policy.failedJobsHistoryLimit,
    approval: base.situation.approval,
    paused: snap.paused,
    dependencies,
    slots: {
      installationActive: slots.installation,
      installationLimit: facts.config.maxActiveJobs,
      clusterActive: slots.cluster,
      clusterLimit: facts.config.clusterMaxActiveJobs,
    },
    policyProblems: jobsPolicyProblems(policy),
  });
  // The gates before the slots need no Redis read; the usage is read only when they all pass.
  const unread = applyGates(decision, gateInput({ installation: 0, cluster: 0 }));
  const early = unread.kind === 'wait' && unread.reason !== 'JobPolicyInvalid' ? unread : undefined;
  if (early === undefined && facts.slots === undefined) return { kind: 'read', read: 'slots' };
  const read = gateInput({
    installation: facts.slots?.installation ?? 0,
    cluster: facts.slots?.cluster ?? 0,
  });
  const gated = early ?? applyGates(decision, read);
  if (gated.kind === 'wait') {
    return planRest(base, waitStatus(planning.statusContext, base.status, gated), {
      ...waitOutcome(base, gated),
      ...gateWaitsFor(
        snap,
        gated.reason,
        capiHold === undefined ? cluster : undefined,
        fullSlotScopes(op, read.slots),
      ),
    });
  }

  // Issue 23 item 5: an object that shows it was provisioned never applies from a lost state unasked, and
  // never destroys from one either: a destroy of an empty state succeeds destroying nothing, the finalizer
  // goes, and the infrastructure is left running with nothing to say so.
  const provisioned = op === 'apply' || op === 'destroy' ? provisionedBy(snap, base.status) : undefined;
  const stateSecret = provisioned !== undefined ? checkedStateSecret(snap) : undefined;
  if (stateSecret !== undefined && facts.state === undefined) return { kind: 'read', read: 'state' };
  const lost =
    stateSecret !== undefined &&
    provisioned !== undefined &&
    facts.state !== undefined &&
    stateLost(facts.state)
      ? { secret: stateSecret.name, provisioned }
      : undefined;
  if (lost !== undefined && !acceptsEmptyState(snap))
    return holdBackStateMissing(
      base,
      op,
      `${lost.provisioned} shows the object was provisioned, but its state Secret ${lost.secret} is ${facts.state === 'missing' ? 'missing' : 'empty (never written)'}; ${op === 'destroy' ? `set the annotation ${ACCEPT_EMPTY_STATE_ANNOTATION}=true to let the object go without a destroy (what the lost state managed stays until removed by hand)` : `set the annotation ${ACCEPT_EMPTY_STATE_ANNOTATION}=true to apply from an empty state`}`,
    );
  // Accepted for a destroy, nothing is left to run: an empty state destroys nothing.
  if (lost !== undefined && op === 'destroy')
    return planFinalizeLostState(base, lost.secret, lost.provisioned);

  // An object none of whose Jobs was ever seen has no pod to guard against (src/core/pods.ts mayHavePods).
  if (facts.pods === undefined && mayHavePods(snap)) return { kind: 'read', read: 'pods' };
  const pods = facts.pods ?? [];
  const holdBack = (reason: 'WaitingForDependencies', message: string, secret?: string) => {
    const wait = waitFor(reason, { now: facts.now, uid: snap.uid, op, message });
    return planRest(base, waitStatus(planning.statusContext, base.status, wait), {
      ...waitOutcome(base, wait),
      ...secretWaitOf(snap.ref, secret),
    });
  };
  // API guard (section 5 step 7; a person can reuse a Job name, so pods go by their Job's UID).
  const previous = previousAttemptWait(base, op, pods);
  if (previous !== undefined) return previous;
  const unlock = staleLockToUnlock(snap.jobs, base.records, pods, facts.now, {
    kind: snap.ref.kind,
    name: snap.ref.name,
    ...(facts.lockHolder !== undefined ? { holderRead: facts.lockHolder } : {}),
  });
  // A holder named like this object's Jobs whose Job is gone (pruned, deleted past its deadline): its pod is
  // read live, once, before the start (issue 23 item 8).
  if (typeof unlock === 'object') return { kind: 'read', read: 'lock-holder', pod: unlock.read };
  const forceUnlockId = unlock;
  const decisions: RunDecisions = {
    ...(gated.plan ? { expectedPlanDigest: gated.plan.digest } : {}),
    ...(forceUnlockId ? { forceUnlockId } : {}),
  };
  // A missing Secret must hold the start back before anything is taken (section 5 step 6).
  const inputs: RunInputs = resolveRunInputs(snap, op, policy, decisions, facts.config.stateEncryption);
  if (inputs.kind === 'missing') return holdBack('WaitingForDependencies', inputs.message, inputs.secret);
  if (inputs.kind === 'not-opted-in') return holdBackNotOptedIn(base, op, inputs);

  // Drift and refresh repeat with equal inputs; the newest success separates one run from the next.
  const tick = op === 'drift' || op === 'refresh' ? (base.status.lastSuccess?.[op] ?? '') : '';
  const { attempt, name, skipped } = freeJobName(
    { kind: snap.ref.kind, name: snap.ref.name, op, inputsHash: snap.inputsHash, tick },
    nextAttemptOf(base.records, op, base.status.attempts),
    new Set(facts.takenJobNames ?? []),
  );
  // Kept in the status and the JobCreated Event: why this object's first Job is not attempt 1.
  const skipNote =
    skipped.length > 0
      ? `; skipped ${skipped.join(', ')}: finished, not this object's (a predecessor of the same name)`
      : '';
  // A wait after a skip keeps the skipped attempts as used, so the next step does not collide again.
  const waitBase: TargetStatus =
    skipped.length > 0
      ? { ...base.status, attempts: withStarted(base.status.attempts, op, attempt - 1) }
      : base.status;
  const image = snap.spec?.source.image ?? '';
  const owner = {
    apiVersion: API_VERSION,
    kind: snap.ref.kind,
    name: snap.ref.name,
    namespace: snap.ref.namespace,
    uid: snap.uid,
  };
  const { serviceAccountName, identity } = runnerAccountOf(policy.serviceAccountName, {
    owner,
    source: inputs.source,
  });
  const manifest = buildJobManifest({
    owner: { ...owner, generation: snap.generation, clusterName: snap.clusterName ?? '' },
    name,
    op,
    attempt,
    inputsHash: snap.inputsHash,
    // Every op but apply runs the digest the newest successful apply ran (DESIGN.md section 2).
    image: op === 'apply' ? image : (base.status.source?.pinnedImage ?? image),
    runnerImage: facts.config.runnerImage,
    policy,
    serviceAccountName,
    stateSuffix: inputs.source.stateSuffix,
  });
  const activeJob = { name, op, attempt, startedAt: facts.now.toISOString() };
  const running = activeStatus(
    planning.statusContext,
    { ...base.status, attempts: withStarted(base.status.attempts, op, attempt) },
    activeJob,
    'JobActive',
    `${op} Job ${name} runs (${gated.reason}${skipNote})`,
  );
  const start: PlannedStart = {
    op,
    reason: gated.reason,
    name,
    attempt,
    skipped,
    manifest,
    decisions,
    annotations: decisionAnnotations(decisions),
    inputs: inputs.source,
    ...(identity ? { identity } : {}),
    ...(inputs.source.outputsSecretName
      ? {
          outputsSecret: buildOutputsSecret({
            owner,
            secretName: inputs.source.outputsSecretName,
            writer: serviceAccountName,
          }),
        }
      : {}),
    guard: guardOf(op, name, policy.activeDeadlineSeconds),
    // The suffix this run names its state by, kept for every later run (src/core/state-identity.ts).
    status: pausedStatus(planning, {
      ...running,
      observedGeneration: snap.generation,
      stateSuffix: inputs.source.stateSuffix,
    }),
    ...(lost !== undefined ? { consumeAnnotation: ACCEPT_EMPTY_STATE_ANNOTATION } : {}),
    // Issue 23 item 8: the state Secret comes back only under the StateMissing rules: an object that shows
    // no provisioning has nothing to lose, and a lost state a person accepted starts from nothing.
    ...(identity && lost !== undefined ? { restoreStateSecret: 'accepted' as const } : {}),
    ...(identity && lost === undefined && provisionedBy(snap, base.status) === undefined
      ? { restoreStateSecret: 'unprovisioned' as const }
      : {}),
    createdEvent: runEvent('JobCreated', {
      action: 'CreateJob',
      note: planning.redactor.redact(
        `${op} Job ${name} (attempt ${attempt}, ${gated.reason}${lost !== undefined ? `, from an empty state: ${ACCEPT_EMPTY_STATE_ANNOTATION}` : ''}${skipNote})`,
      ),
      transitionKey: name,
    }),
    ...(forceUnlockId
      ? {
          forceUnlockEvent: runEvent('ForceUnlocked', {
            action: 'CreateJob',
            note: planning.redactor.redact(`Job ${name} force-unlocks the stale state lock ${forceUnlockId}`),
            transitionKey: forceUnlockId,
          }),
        }
      : {}),
    outcome: outcome(planning, gated.reason, {
      job: name,
      ...(skipNote !== '' ? { message: `attempt ${attempt}${skipNote}` } : {}),
    }),
    held: { status: waitBase, now: facts.now, bookkept: base.bookkeeping !== undefined, ...lastJob(base) },
  };
  return finish(base, base.status, { kind: 'start', start }, start.outcome, false);
}

/**
 * The status and outcome of a wait the Redis guards or a foreign Job impose on `start` at perform time
 * (DESIGN.md section 5 steps 6 and 8): the wait over the status `start.held` planned, with the Paused
 * condition of `snap` (the snapshot the start was planned from), woken by what it waits for.
 */
export function heldOutcome(
  start: PlannedStart,
  held: HeldWait,
  snap: Snapshot,
): { status: TargetStatus | undefined; outcome: StepOutcome } {
  const { now } = start.held;
  const redactor = snapshotRedactor(snap);
  const context: StatusContext = {
    now,
    generation: snap.generation,
    deleting: snap.meta.deletionTimestamp !== undefined,
    redactor,
  };
  const wait = waitFor(held.reason, { now, uid: snap.uid, op: start.op, message: held.message });
  return {
    status: pausedStatusOf(snap, now, {
      ...waitStatus(context, start.held.status, wait),
      observedGeneration: snap.generation,
    }),
    outcome: {
      ...outcomeOf(snap.ref, wait.reason, {
        requeueAfterSeconds: wait.requeueAfterSeconds,
        bookkept: start.held.bookkept,
        ...(start.held.job !== undefined ? { job: start.held.job } : {}),
        message: redactor.redact(wait.message),
      }),
      ...(held.reason === 'WaitingForForeignJob' ? { job: start.name } : {}),
      ...heldWaitsFor(snap, held),
    },
  };
}

/**
 * What a gate's wait is woken by (src/core/wake.ts): the TerraformCluster whose infrastructure it waits for
 * (`cluster`, when that is the cause), the bootstrap data Secret its owner names, the Job slots found full
 * (`slotScopes`). The other gates' waits end by the object's own events (approval, pause, owner) or by time
 * (backoff, policy).
 */
function gateWaitsFor(
  snap: Snapshot,
  reason: WaitDecision['reason'],
  cluster: Snapshot['owningCluster'],
  slotScopes: readonly SlotScope[],
): Pick<StepOutcome, 'waitsFor'> {
  if (reason === 'WaitingForDependencies' && cluster !== undefined && !cluster.ready)
    return { waitsFor: [{ kind: 'TerraformCluster', namespace: snap.ref.namespace, name: cluster.name }] };
  const bootstrap = snap.capi?.owner?.bootstrapDataSecretName;
  if (reason === 'WaitingForBootstrapData' && bootstrap !== undefined)
    return secretWaitOf(snap.ref, bootstrap);
  if (reason === 'WaitingForJobSlot')
    return { waitsFor: fullJobSlotSources(snap.ref.namespace, snap.clusterName, slotScopes) };
  return {};
}

/**
 * What a start held back at its guards is woken by: the release of its lease group or of a slot of the
 * Job slot set found full.
 */
function heldWaitsFor(snap: Snapshot, held: HeldWait): Pick<StepOutcome, 'waitsFor'> {
  const { reason } = held;
  if (reason === 'WaitingForJobSlot')
    return {
      waitsFor: fullJobSlotSources(
        snap.ref.namespace,
        snap.clusterName,
        held.slotScope === undefined ? [] : [held.slotScope],
      ),
    };
  if (
    reason === 'WaitingForRunLease' ||
    reason === 'WaitingForClusterOperation' ||
    reason === 'WaitingForMachineOperations'
  )
    return { waitsFor: [runLeasesSource(snap.ref, snap.clusterName)] };
  return {};
}

/**
 * A run held back by a Secret that did not opt in (issue 16 item 1): no Job, the wait, and a Warning Event
 * when the object was not already waiting for this (a wait is written once; so is its Event).
 */
function holdBackNotOptedIn(base: Base, op: Op, notOptedIn: NotOptedIn): Planned {
  const { planning } = base;
  const { snap, facts } = planning;
  const wait = waitFor('VariablesSecretNotOptedIn', {
    now: facts.now,
    uid: snap.uid,
    op,
    message: notOptedIn.message,
  });
  const status = waitStatus(planning.statusContext, base.status, wait);
  const condition = OP_CONDITION[op];
  const repeated =
    snap.status.waitReason === wait.reason &&
    findCondition(snap.status.conditions, condition)?.message ===
      findCondition(status.conditions, condition)?.message;
  const event = notOptedInEvent(notOptedIn, snap.inputsHash);
  const events = repeated
    ? base.events
    : [...base.events, { ...event, note: planning.redactor.redact(event.note) }];
  return planRest({ ...base, events }, status, {
    ...waitOutcome(base, wait),
    ...secretWaitOf(snap.ref, notOptedIn.secret),
  });
}

/**
 * An apply or destroy held back because the state of a provisioned object is gone (issue 23 item 5): no
 * Job, the wait, and a Warning Event when the object was not already waiting for this.
 */
function holdBackStateMissing(base: Base, op: Op, message: string): Planned {
  const { planning } = base;
  const { snap, facts } = planning;
  const wait = waitFor('StateMissing', { now: facts.now, uid: snap.uid, op, message });
  const status = waitStatus(planning.statusContext, base.status, wait);
  const repeated =
    snap.status.waitReason === wait.reason &&
    findCondition(snap.status.conditions, OP_CONDITION[op])?.message ===
      findCondition(status.conditions, OP_CONDITION[op])?.message;
  const event = runEvent('StateMissing', {
    action: 'Reconcile',
    note: planning.redactor.redact(message),
    transitionKey: snap.inputsHash,
  });
  return planRest(
    { ...base, events: repeated ? base.events : [...base.events, event] },
    status,
    waitOutcome(base, wait),
  );
}
