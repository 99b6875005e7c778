import type { StateEncryption } from '../schemas/kinds/state-encryption.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { Op } from '../schemas/result.ts';
import type { BlockMoveChange } from './block-move.ts';
import type { Bookkeeping } from './bookkeeping.ts';
import type { StartDecision } from './decide.ts';
import type { RunEvent } from './event-spec.ts';
import type { JobManifest } from './job-manifest.ts';
import type { OutputsSecretManifest } from './outputs-secret.ts';
import type { HeldPod } from './pod-release.ts';
import type { PlanChange } from './record-run.ts';
import type { RunDecisions } from './run-decisions.ts';
import type { RunConfigSource } from './run-secret-manifest.ts';
import type { RunnerIdentity } from './runner-identity.ts';
import type { RunnerSetup } from './runner-setup.ts';
import type { SlotScope } from './slot-shares.ts';
import type { Snapshot } from './snapshot.ts';
import type { StateCleanup, StateObjects } from './state-cleanup.ts';
import type { StateContent } from './state-evidence.ts';
import type { StepOutcome } from './step-outcome.ts';
import type { PodView } from './views.ts';

/**
 * The plan of one reconcile step, as src/core/planner.ts decides it and src/step/perform.ts carries it
 * out: the facts it is made from, the writes, the move and the outcome. A plan is plain data (no
 * function, no closure): what the shell needs beyond it, it makes from the snapshot with a core function
 * (`snapshotRedactor` in src/core/run-inputs.ts, `heldOutcome` in src/core/planner/start.ts).
 */

/** The step's configuration the plan depends on (src/config.ts reads it once). */
export interface PlannerConfig {
  /** `--runner-image`: the init container that copies the runner into every Job (section 9). */
  runnerImage: string;
  /** `--max-active-jobs` per installation (section 5, default 200). */
  maxActiveJobs: number;
  /** `--cluster-max-active-jobs` per Cluster API cluster (default 20). */
  clusterMaxActiveJobs: number;
  /**
   * The installation's default state encryption (`CAPTF_STATE_ENCRYPTION_SECRET`), for objects whose spec
   * names none (src/core/state-encryption.ts).
   */
  stateEncryption?: StateEncryption;
}

/** Everything the planner reads. */
export interface PlanFacts {
  snap: Snapshot;
  now: Date;
  config: PlannerConfig;
  /** The object's pods (label `captf.io/owner-uid`), once read. */
  pods?: readonly PodView[];
  /** Job slots in use per installation and per the object's Cluster API cluster, once read. */
  slots?: { installation: number; cluster: number | undefined };
  /** Whether the watched Job's per-run Secret exists, once read. */
  runSecretExists?: boolean;
  /**
   * Names this step's start found held by a finished Job that is not this object's (its create answered
   * AlreadyExists, DESIGN.md section 5 step 8), in the order found; the start moves past them. Learnt
   * only from such a collision, so the normal path pays no read for it.
   */
  takenJobNames?: readonly string[];
  /**
   * What the object's state Secret holds (src/core/state-evidence.ts), once read: only before an apply of
   * an object that shows it was provisioned, or before a deleting object's finalizer goes.
   */
  state?: StateContent;
  /**
   * A pod of this object an event showed being deleted with our finalizer: the step reads the pods and
   * releases every one no bookkeeping will read (src/core/pod-release.ts), whatever else it does.
   */
  heldPod?: HeldPod;
  /**
   * The API server refused the contract fields of this step's bookkeeping for good (400/422): its words.
   * The plan then records those runs as `OutputsInvalid` and writes no contract field (section 7).
   */
  refusedOutputs?: string;
  /**
   * The pod holding the state lock the newest run reported, read live by name, once read: only when it is
   * named like this object's Jobs but its Job is gone (src/core/lock-evidence.ts); `pod` undefined = gone.
   */
  lockHolder?: { name: string; pod: PodView | undefined };
  /**
   * A member's cluster lease and own run lease (Redis), once read: only when the status records
   * `WaitingForClusterOperation` and the Jobs are unlisted (src/core/planner/cluster-operation.ts).
   */
  clusterLease?: ClusterLeaseFact;
}

/**
 * A member's lease group as Redis holds it, once read: the cluster lease's holder (undefined: free) and
 * whether the member's own run lease is held; `unknown` when Redis did not answer.
 */
export type ClusterLeaseFact = { clusterHolder: string | undefined; runLeaseHeld: boolean } | 'unknown';

/** A fact the planner needs before it can plan. */
export type PlanRead = 'jobs' | 'pods' | 'slots' | 'run-secret' | 'state' | 'lock-holder' | 'cluster-lease';

/** One Job as the shell addresses it: name, and the incarnation read (UID and version preconditions). */
export interface JobRef {
  name: string;
  uid: string;
  resourceVersion: string;
}

/**
 * How the shell deletes a pod: its name, and its UID and the version read as the delete's preconditions (a
 * pod that changed since, e.g. bound or started, is judged again at the next read).
 */
export interface PodRef {
  name: string;
  uid: string;
  resourceVersion: string;
}

/** What names a run's Redis guards (src/step/leases.ts builds them). */
export interface RunGuardSpec {
  op: Op;
  job: string;
  activeDeadlineSeconds: number;
  /**
   * The Cluster API cluster the run's guards were taken in, from its Job ({@link runClusterOf}); absent for
   * a start, whose guards are taken in the object's cluster of now.
   */
  clusterName?: string;
}

/** A TerraformPlan write: create one from a blocked run, or move one to Applied or Superseded. */
export type PlanWrite = PlanChange;

/** A wait found when the run's Redis guards were taken (DESIGN.md section 5 step 6). */
export interface HeldWait {
  reason:
    | 'WaitingForRunLease'
    | 'WaitingForClusterOperation'
    | 'WaitingForMachineOperations'
    | 'WaitingForJobSlot'
    | 'WaitingForForeignJob';
  message: string;
  /** `WaitingForJobSlot`: the slot set found full (the one the wait registers under). */
  slotScope?: SlotScope;
}

/** A Job to start, with everything the shell needs to create it crash-safely. */
export interface PlannedStart {
  op: Op;
  reason: StartDecision['reason'];
  name: string;
  attempt: number;
  /** Names of earlier attempts passed over: finished Jobs of another object hold them (`takenJobNames`). */
  skipped: string[];
  manifest: JobManifest;
  /** The run's decisions, also kept as annotations on the Job (src/core/run-decisions.ts). */
  decisions: RunDecisions;
  annotations: Record<string, string>;
  /** The run config without the plan key (the shell reads or creates that Secret). */
  inputs: Omit<RunConfigSource, 'planHmacKey'>;
  /** The object's runner identity, put in place before the Job; absent when the spec names the account. */
  identity?: RunnerIdentity;
  /**
   * The empty outputs Secret (`spec.outputs.secretName`, src/core/outputs-secret.ts), created before the
   * identity that may write it; one already there must be the object's, or the start is refused.
   */
  outputsSecret?: OutputsSecretManifest;
  guard: RunGuardSpec;
  /** The status once the Job exists. */
  status: TargetStatus;
  /** `JobCreated` (the shell adds the created Job as `related`). */
  createdEvent: RunEvent;
  /** `ForceUnlocked`, when the Job carries a stale lock id (section 12). */
  forceUnlockEvent?: RunEvent;
  /**
   * An annotation to remove before the Job is created, under the version read: the consent to apply from
   * an empty state is spent by the one start it allowed (src/core/state-evidence.ts).
   */
  consumeAnnotation?: string;
  /**
   * The state Secret may be gone while the runner identity is in place (deleted by hand, a restore without
   * its Secrets): the shell puts the empty one back before the Job, since the runner may only `get` and
   * `update` it (src/core/runner-identity.ts), never create it; only when a person accepted the lost state
   * (`accepted`: always) or the object shows no provisioning (`unprovisioned`: unless the identity's check
   * is remembered, like the Lease: a run that fails for it forgets the check, DESIGN.md section 15).
   */
  restoreStateSecret?: 'accepted' | 'unprovisioned';
  /** The outcome once the Job exists. */
  outcome: StepOutcome;
  /** What a wait the Redis guards or a foreign Job impose at perform time is made of (`heldOutcome`). */
  held: HeldBase;
}

/**
 * The planned part of a start's wait found at perform time: src/core/planner/start.ts `heldOutcome` makes
 * its status and outcome from this, the wait and the snapshot.
 */
export interface HeldBase {
  /** The status the wait is written over: the one after bookkeeping, skipped attempts kept as used. */
  status: TargetStatus;
  /** The planner's clock (condition times, the retry time of the wait). */
  now: Date;
  /** Whether this step bookkept a run; `job`: the newest it bookkept. */
  bookkept: boolean;
  job?: string;
}

/** What the step does beyond its writes. */
export type Move =
  /** Nothing more; a stale run lease of a finished Job is healed (one Redis read when clean). */
  | { kind: 'rest'; healLease: boolean }
  /** Not ours to act on. */
  | { kind: 'none' }
  /** Replace the object's finalizers (add ours first; remove ours once nothing is left to destroy). */
  | {
      kind: 'finalizers';
      finalizers: string[];
      gone: boolean;
      /** With `gone`: the default backend's state objects, deleted first when the state holds nothing. */
      state?: StateObjects & { cleanup: StateCleanup };
      /** Adding ours: what the first Job needs, put in place after the finalizer (src/core/runner-setup.ts). */
      setup?: RunnerSetup;
    }
  /** A Job runs: renew its guards, adopt it after a crash (create its missing per-run Secret), show it. */
  | {
      kind: 'watch';
      job: JobRef & { op: Op; attempt: number };
      guard: RunGuardSpec;
      /** The status while it runs; undefined when the read one already says so. */
      status: TargetStatus | undefined;
      /** C02: the per-run Secret to create for an adopted Job, from the same inputs. */
      adopt?: Omit<RunConfigSource, 'planHmacKey'>;
    }
  /** Delete a Job (Background propagation): deadline enforced, stuck, or a recorded leftover. */
  | {
      kind: 'delete-job';
      job: JobRef;
      /** Release its guards after the delete (a stuck Job never bookkept). */
      release?: RunGuardSpec;
      /** Pods whose result finalizer goes with it. */
      releasePods: string[];
    }
  | { kind: 'start'; start: PlannedStart };

/** The whole plan of one step. */
export interface StepPlan {
  kind: 'plan';
  /** Finished Jobs recorded by this step, oldest first (marks, metrics, Secrets, guards). */
  bookkept: Bookkeeping['runs'];
  /** TerraformPlans to write before the status. */
  plans: PlanWrite[];
  /** Spec contract fields to merge-patch before the status. */
  spec: Record<string, unknown> | undefined;
  /** The next status; undefined when it equals the one read (then nothing is written). */
  status: TargetStatus | undefined;
  /** Events after the status write (best effort, once per transition). */
  events: RunEvent[];
  /**
   * Jobs to prune after the marks, each with its run log Secret (src/core/run-log.ts), deleted first: a step
   * that dies between the two prunes the Job again, and its log's delete is then a NotFound.
   */
  prune: (JobRef & { runLog: string })[];
  /** Pods whose result finalizer goes after the marks (src/core/pod-release.ts). */
  releasePods: string[];
  /**
   * Per-run Secrets of active Jobs found gone, deleted by name before the status that forgets those Jobs
   * (a step that dies in between finds them gone again): a Job deleted with orphaning left its Secret
   * without the owner reference the garbage collector deletes it by (src/core/orphaned-pods.ts).
   */
  lostRunSecrets: string[];
  /**
   * Orphaned pods that no longer run (src/core/orphaned-pods.ts), deleted before the releases: each delete
   * goes under the version read, which a release would move on.
   */
  deletePods: PodRef[];
  move: Move;
  /**
   * Cluster API's `clusterctl.cluster.x-k8s.io/block-move` (src/core/block-move.ts): added before a start's
   * Job (or while a Job runs without it), removed once nothing runs; absent when the object already says
   * what the move wants.
   */
  blockMove?: BlockMoveChange;
  /** The outcome when the move goes as planned. */
  outcome: StepOutcome;
}

/** The planner's answer: a plan, or the fact it needs first. */
export type Planned = { kind: 'read'; read: PlanRead; pod?: string } | StepPlan;
