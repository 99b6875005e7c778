import type { ObjectRef } from '../core/object-ref.ts';
import type { HeldPod } from '../core/pod-release.ts';
import type { StepOutcome } from '../core/step-outcome.ts';

/**
 * The contract between the reconcile step (src/step) and its callers (src/settle, used by the HTTP routes,
 * the tick runner and the sweep). A step is one idempotent pass over one object (DESIGN.md section 5); its
 * vocabulary (ObjectRef, StepOutcome and the closed set of reasons) lives in src/core.
 */

/** Options of one step call. */
export interface StepOptions {
  /** Explain the decision without mutating anything (`POST /reconcile?dryRun=true`). */
  dryRun?: boolean;
  /**
   * The event that woke the step is about a pod of the object being deleted with our finalizer: the step
   * releases it at once when nothing will read it (src/core/pod-release.ts), even with the object gone.
   */
  heldPod?: HeldPod;
  /**
   * A Job of the object may have changed (its event, a pod's, the sweep's list): the step lists the Jobs
   * even when the object shows nothing runs (src/core/jobs-read.ts), so a Job the object does not show
   * (its start's status write lost while a concurrent step removed the block-move annotation) is bookkept.
   */
  listJobs?: boolean;
}

/** Runs one reconcile step for one object. Throws only for bugs; outages come back as `unavailable`. */
export type ReconcileStep = (ref: ObjectRef, options?: StepOptions) => Promise<StepOutcome>;
