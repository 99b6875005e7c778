import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import type { Op } from '../schemas/result.ts';
import { jittered } from './jitter.ts';

/**
 * The waits of DESIGN.md section 6: each reason with its requeue, and the wait a step records. A wait is
 * written into the status once (section 2: `waitReason` and `nextAttemptAt` are stable while the cause is
 * unchanged), so nothing in it may depend on the clock of the step that found it: `nextAttemptAt` exists
 * only for a wait with a natural end (a backoff, a contended lock), computed from that end in whole seconds;
 * every other wait carries none, and only its requeue, which never reaches the status, counts from now.
 */

/**
 * The requeue of a wait that an event or another step ends (src/core/wake.ts): a safety net for a lost
 * event or wake, not a poll. Ten minutes, the sweep's period (section 8), jittered per object so a fleet
 * that started waiting at once does not come back in one tick, and stretched by the reads of the step
 * that found the wait (src/core/safety-requeue.ts), so a waiting object costs at most 0.1 reads a minute.
 */
export const EVENT_SAFETY_SECONDS = 600;

interface WaitRow {
  /** Seconds until the object is looked at again (the fallback when an event is missed). */
  requeueSeconds: number;
  /** Spread a fleet's retries with the object's jitter (section 6: Job slot waits). */
  jitter: boolean;
  /**
   * The requeue only finds what no event reported (a lost event or wake, a Secret no watch selects): it is
   * stretched by the reads of the step that found the wait (src/core/safety-requeue.ts).
   */
  safetyNet: boolean;
  /** What the wait means, in one sentence: docs/reference/conditions.md is generated from it. */
  meaning: string;
}

/** DESIGN.md section 6: each wait reason with its requeue interval and its meaning. */
export const WAIT_TABLE: Readonly<Record<WaitReason, WaitRow>> = {
  // A fallback only: the Job's end (or deletion), its pods' trouble and the object's deletion are events;
  // the deadline and the stuck check are requeues of their own (src/core/watch.ts). Each watching step
  // renews the run lease, whose TTL is the deadline + 900 s (section 5 step 6).
  JobActive: {
    requeueSeconds: 300,
    jitter: false,
    safetyNet: false,
    meaning: "A Job of the object runs (`status.activeJob`); the Job's own events wake the object.",
  },
  ImagePullBackOff: {
    requeueSeconds: 30,
    jitter: false,
    safetyNet: false,
    meaning:
      "An image of the running Job (the module image or the runner's init image) cannot be pulled (yet).",
  },
  CreateContainerConfigError: {
    requeueSeconds: 30,
    jitter: false,
    safetyNet: false,
    meaning:
      'A container of the running Job cannot be created from its configuration (a missing Secret or ConfigMap).',
  },
  // Lifting the pause wakes the object: the Cluster's event (src/http/routes/events.ts) or, for its own
  // annotation, the object's.
  Paused: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: true,
    meaning:
      'Cluster API pause is set: bookkeeping continues, nothing starts, and a deleting object keeps its finalizer.',
  },
  // The real delay comes from the backoff verdict (`nextAttemptAt`); this is the cap it never exceeds.
  Backoff: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: false,
    meaning: 'Counted failures earned a delay (DESIGN.md section 4); the retry starts at `nextAttemptAt`.',
  },
  AwaitingApproval: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: false,
    meaning: 'A plan waits for a person to approve its TerraformPlan (DESIGN.md section 11).',
  },
  // Woken by what it waits for (src/core/wake.ts): its TerraformCluster's step once ready, or the watch event
  // of the Secret it misses (labelled `captf.io/variables=true`); a backend Secret carries no label, so no
  // event comes for it: the safety requeue finds it.
  WaitingForDependencies: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning:
      "Something this object builds on is not ready: a machine's or pool's TerraformCluster, or a Secret or key the spec reads.",
  },
  // Cluster API's Machine controller sets the owner reference on our object: that write wakes it.
  WaitingForOwner: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning:
      'Cluster API cloned the object from a template and has not set its owner reference (Machine or MachinePool) yet.',
  },
  // The Cluster's event wakes the object once provisioned (src/http/routes/events.ts).
  WaitingForClusterInfrastructure: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning:
      "The Cluster API Cluster's infrastructure is not provisioned yet (`status.initialization.infrastructureProvisioned`).",
  },
  // The Machine's event wakes the object when it names its data, the Secret's own event (type
  // `cluster.x-k8s.io/secret`) when the data is written after its name was set.
  WaitingForBootstrapData: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning:
      'The owning Machine or MachinePool has no bootstrap data yet (`spec.bootstrap.dataSecretName` unset, or its Secret missing).',
  },
  // A person labels the Secret: its watch event (the label selects it) wakes the object.
  VariablesSecretNotOptedIn: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning:
      'A Secret that `variablesFrom` or `env[].valueFrom` reads lacks the label `captf.io/variables=true`.',
  },
  // The bookkeeping step that frees a slot wakes one waiter of it (src/core/wake.ts).
  WaitingForJobSlot: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning:
      'The installation or the Cluster API cluster runs as many Jobs as allowed (drift and refresh start only below 80 %).',
  },
  JobPolicyInvalid: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: false,
    meaning: 'The merged Job policy breaks a rule (`lockTimeoutSeconds` not below `activeDeadlineSeconds`).',
  },
  SpecInvalid: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: true,
    meaning:
      'The spec does not parse, stored before the CRD refused it (an older release); fix the spec. A deleting object with state cannot destroy until then (DESIGN.md section 2).',
  },
  // A person fixes or removes the named fields; that write wakes the object.
  StatusUnreadable: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: true,
    meaning:
      'Fields of the status do not parse (written by another release or by hand): nothing runs until a person fixes or removes them; the condition names them.',
  },
  // A person sets the annotation (captf.io/accept-empty-state) or restores the Secret; no event about a
  // Secret reaches the object, so this requeue finds a restored one.
  StateMissing: {
    requeueSeconds: 600,
    jitter: false,
    safetyNet: true,
    meaning:
      'The object shows it was provisioned but its state Secret is missing or was never written by OpenTofu: no apply or destroy starts until the Secret is restored or a person sets `captf.io/accept-empty-state` (a deleting object then goes without a destroy).',
  },
  // The bookkeeping step that releases the lease group's leases wakes its waiters (src/core/wake.ts).
  WaitingForClusterOperation: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning: 'A TerraformCluster apply or destroy holds the cluster lease; its machines and pools wait.',
  },
  WaitingForMachineOperations: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning: "Machine or pool applies or destroys hold leases; the cluster's apply or destroy waits.",
  },
  WaitingForRunLease: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: true,
    safetyNet: true,
    meaning: "Another step holds this object's run lease (Redis).",
  },
  LockContended: {
    requeueSeconds: 30,
    jitter: false,
    safetyNet: false,
    meaning: 'The state lock is held by another live pod of this object (DESIGN.md section 4: not counted).',
  },
  // A pod's deletion event wakes its owner (src/core/event-relevance.ts), but a reference-mode source cannot
  // map a gone pod to its owner, and a terminating pod's wait is short by nature (its grace period): polled.
  WaitingForPreviousAttempt: {
    requeueSeconds: 30,
    jitter: false,
    safetyNet: false,
    meaning: 'A pod of an earlier attempt is not terminal yet (DESIGN.md section 5, API guard).',
  },
  WaitingForForeignJob: {
    requeueSeconds: 30,
    jitter: false,
    safetyNet: false,
    meaning:
      'A Job with the deterministic name of the next Job runs and belongs to something else (a finished one is passed over).',
  },
  WaitingForCache: {
    requeueSeconds: 5,
    jitter: false,
    safetyNet: false,
    meaning: 'A write of the controller is not visible in its reads yet.',
  },
  // Retried every minute: a policy or quota lifted needs no event of ours (src/core/write-refusal.ts).
  WriteRefused: {
    requeueSeconds: 60,
    jitter: false,
    safetyNet: false,
    meaning:
      'The API server refused a write of the step for good (an admission policy, a quota, RBAC); the `WriteRefused` condition names the write and the answer. Retried every minute; the first step that gets through removes it.',
  },
  // A namespace being deleted never becomes Active again: the way out is a person's write to the object
  // (the annotation, or the finalizer removed), which wakes it; the requeue finds a state Secret the
  // namespace's deletion has removed meanwhile, the only way out without a person for an object that holds
  // nothing, so it is not stretched by the look's reads (it holds the namespace's deletion).
  NamespaceTerminating: {
    requeueSeconds: EVENT_SAFETY_SECONDS,
    jitter: false,
    safetyNet: false,
    meaning:
      "The object's namespace is being deleted and the API server refused a create of the step (`WriteRefused` condition): no Job can start there, so a deleting object's destroy cannot run and what its state manages stays. A person lets it go with `captf.io/accept-empty-state` once its state Secret is gone (default backend), or by removing the finalizer.",
  },
};

/** A wait: nothing starts; look again after `requeueAfterSeconds`. */
export interface WaitDecision {
  kind: 'wait';
  reason: WaitReason;
  requeueAfterSeconds: number;
  /** The wait's natural end (whole seconds), when it has one: backoff, a contended lock. */
  nextAttemptAt?: Date;
  /** The op that waits, when a start was held back. */
  op?: Op;
  /** A sentence for the condition message and logs; stable while the cause is (never a count or a time). */
  message: string;
}

/**
 * The wait for `reason`: until `untilMs` when the wait has a natural end (then `nextAttemptAt` is that end
 * rounded up to the second, so every step of the same wait names the same instant), otherwise the table's
 * requeue (jittered by the UID where the table says so) and no `nextAttemptAt`.
 */
export function waitFor(
  reason: WaitReason,
  context: { now: Date; uid: string; message: string; op?: Op; untilMs?: number },
): WaitDecision {
  const base = {
    kind: 'wait' as const,
    reason,
    ...(context.op ? { op: context.op } : {}),
    message: context.message,
  };
  if (context.untilMs !== undefined) {
    const endMs = Math.ceil(context.untilMs / 1000) * 1000;
    return {
      ...base,
      requeueAfterSeconds: Math.max(0, Math.ceil((endMs - context.now.getTime()) / 1000)),
      nextAttemptAt: new Date(endMs),
    };
  }
  const row = WAIT_TABLE[reason];
  const seconds = row.jitter ? jittered(row.requeueSeconds, context.uid) : row.requeueSeconds;
  return { ...base, requeueAfterSeconds: Math.ceil(seconds) };
}
