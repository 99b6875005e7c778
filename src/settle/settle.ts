import type { BaseLogger } from 'pino';
import type { SeenObject } from '../core/event-relevance.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import { withSafetyRequeue } from '../core/safety-requeue.ts';
import type { StepOutcome } from '../core/step-outcome.ts';
import { LEASE_WAIT_REASONS } from '../metrics/lease-waits.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { ReconcileStep, StepOptions } from '../step/contract.ts';
import type { DependentsPort, EventDedupe, NewestHandled, ObjectVersion, RequeueSchedule } from './ports.ts';
import { type ResolvedOutcome, resolveOutcome } from './resolve.ts';

/**
 * Settling one step, the one way every caller runs a step (`/events`, `/reconcile`, `/tick` and the sweep;
 * controller-runtime's single result handler): the step runs, is counted once (`captf_reconcile_steps_total`,
 * `captf_reconcile_step_duration_seconds`, `captf_lease_waits_total`), its outcome becomes the log line, the
 * requeue and the HTTP answer (src/settle/resolve.ts), and the object version it left is remembered, so the
 * watch event of the step's own write is dropped before any step (DESIGN.md section 2: a waiting object is
 * written once). A dry run is counted and logged, and changes nothing.
 */

export interface SettleDeps {
  step: ReconcileStep;
  schedule: Pick<RequeueSchedule, 'add'>;
  dedupe: Pick<EventDedupe, 'remember'>;
  /**
   * The newest version handled, per object: every settled step records the version it left, so an event
   * of an older version, however late the source delivers it, is `Stale` (none: the tools and benches that
   * keep no record).
   */
  newest?: NewestHandled;
  dependents: DependentsPort;
  metrics: Pick<Metrics, 'stepsTotal' | 'stepDuration' | 'leaseWaits' | 'stepKubeRequests'>;
  /** Milliseconds since the epoch. */
  clock: () => number;
  /**
   * Runs the step and counts the Kubernetes requests it sends (KubeAdapter.measureRequests); the count goes
   * into the step's log line as `kubeRequests` and `captf_reconcile_step_kube_requests_total{action}`, so an
   * operator sees what each step, and each kind of step, cost the API server. Its reads price a wait's
   * safety requeue (src/core/safety-requeue.ts); without it the table's requeue stands.
   */
  measureRequests?: <T>(run: () => Promise<T>) => Promise<{ value: T; requests: number; reads: number }>;
}

/** How one step is settled. */
export interface SettleOptions extends StepOptions {
  log: Pick<BaseLogger, 'debug' | 'info' | 'warn'>;
  /**
   * The caller holds a schedule claim for the object (`/tick`) and completes it with `claimNextDueAtMs`
   * itself, instead of a separate requeue.
   */
  claimed?: boolean;
  /** The version of the object the event that started the step was about, with its content's digest. */
  event?: SeenObject;
}

/** A settled step. */
export interface Settled {
  outcome: StepOutcome;
  resolved: ResolvedOutcome;
}

/**
 * Runs and settles one step. Throws UnavailableError when the requeue cannot be scheduled (the route
 * answers 503; the sweep heals it), and rethrows a step's bug after counting it.
 */
export type Settle = (ref: ObjectRef, options: SettleOptions) => Promise<Settled>;

/** Builds the settle function over its dependencies. */
export function createSettle(deps: SettleDeps): Settle {
  return async (ref, options) => {
    const { log, claimed, event, ...stepOptions } = options;
    const startMs = deps.clock();
    // A step that throws is counted too, with what it sent before it threw.
    const run = async (): Promise<{ outcome: StepOutcome } | { error: unknown }> => {
      try {
        return { outcome: await deps.step(ref, stepOptions) };
      } catch (error) {
        return { error };
      }
    };
    const measured =
      deps.measureRequests === undefined
        ? { value: await run(), requests: undefined, reads: undefined }
        : await deps.measureRequests(run);
    deps.metrics.stepDuration.observe((deps.clock() - startMs) / 1000);
    const kubeRequests = measured.requests;
    const action = 'error' in measured.value ? 'error' : measured.value.outcome.action;
    deps.metrics.stepsTotal.inc({ action });
    if (kubeRequests !== undefined) deps.metrics.stepKubeRequests.inc({ action }, kubeRequests);
    if ('error' in measured.value) throw measured.value.error;
    const outcome =
      measured.reads === undefined
        ? measured.value.outcome
        : withSafetyRequeue(measured.value.outcome, measured.reads);
    if (outcome.action === 'waiting' && LEASE_WAIT_REASONS.has(outcome.reason))
      deps.metrics.leaseWaits.inc({ reason: outcome.reason });
    const resolved = resolveOutcome(outcome, deps.clock());
    const dryRun = options.dryRun === true;
    const fields =
      kubeRequests === undefined ? resolved.log.fields : { ...resolved.log.fields, kubeRequests };
    log[resolved.log.level]({ ...fields, dryRun }, resolved.log.msg);
    if (dryRun) return { outcome, resolved };
    if (outcome.observed !== undefined) {
      // Best effort: a lost marker costs one more step (which then finds nothing to do), never a result.
      await deps.dedupe.remember(outcome.observed).catch((error: unknown) => {
        log.warn({ err: error, ...ref }, 'remember the observed version: failed');
      });
    }
    const handled = resolved.status === 503 ? undefined : handledVersion(event, outcome.observed);
    if (handled !== undefined && deps.newest !== undefined) {
      // A hint like the marker: lost, a late event of an older version costs one step.
      await deps.newest.remember(ref, handled).catch((error: unknown) => {
        log.warn({ err: error, ...ref }, 'remember the newest version: failed');
      });
    }
    await wake(deps, ref, outcome, log);
    if (!claimed && resolved.requeue !== undefined)
      await deps.schedule.add(resolved.requeue.ref, resolved.requeue.dueAtMs);
    return { outcome, resolved };
  };
}

/**
 * The version a step leaves handled: the event's own, with its content, when the step wrote nothing (or
 * wrote and wants its echo to start the next step); the version its writes left otherwise, whose content
 * only that write's own event tells (digest ''). A step without an event (`/tick`, `/reconcile`, the
 * sweep) leaves the version it read or wrote, its content unknown.
 */
export function handledVersion(
  event: SeenObject | undefined,
  observed: ObjectVersion | undefined,
): SeenObject | undefined {
  if (event === undefined) return observed === undefined ? undefined : { ...observed, digest: '' };
  if (
    observed === undefined ||
    observed.uid !== event.uid ||
    observed.resourceVersion === event.resourceVersion
  )
    return event;
  return { ...observed, digest: '' };
}

/**
 * Dependencies as hints (best effort, like the observed version): a waiting object registers under what it
 * waits for; an object that became ready, or a step that released leases and slots, brings its waiters'
 * requeues to now (src/core/wake.ts). A failure here costs latency, never a result: every waiter still has
 * its own requeue.
 */
async function wake(
  deps: SettleDeps,
  ref: ObjectRef,
  outcome: StepOutcome,
  log: SettleOptions['log'],
): Promise<void> {
  try {
    for (const source of outcome.waitsFor ?? []) await deps.dependents.add(source, ref);
    if (outcome.wakesDependents === true) {
      const nowMs = deps.clock();
      for (const waiter of await deps.dependents.take(ref)) await deps.schedule.add(waiter, nowMs);
    }
    for (const { source, limit } of outcome.wakes ?? []) {
      const nowMs = deps.clock();
      for (const waiter of await deps.dependents.take(source, limit)) await deps.schedule.add(waiter, nowMs);
    }
  } catch (error) {
    log.warn({ err: error, ...ref }, 'wake dependents: failed');
  }
}
