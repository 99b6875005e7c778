import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import type { StepOutcome, StepReason } from '../../../src/core/step-outcome.ts';
import { buildApp } from '../../../src/http/app.ts';
import { NO_NEWEST } from '../../../src/http/deps.ts';
import { createMetrics } from '../../../src/metrics/registry.ts';
import { NO_DEPENDENTS } from '../../../src/settle/ports.ts';
import { createSettle } from '../../../src/settle/settle.ts';
import type { ReconcileStep } from '../../../src/step/contract.ts';

/**
 * The dry run's promise (issue 10: "dry run = plan, then describe the plan"), held on every field case: each
 * real step of the step suite is preceded by `POST /reconcile/{kind}/{ns}/{name}?dryRun=true` on a real app
 * over the same step, and the two must decide the same (action, reason, Job). Only what a dry run cannot
 * know may differ: what the perform itself runs into (a lease or a slot taken in Redis, a foreign Job, a
 * finished foreign Job's name passed over, a Conflict, a refused write, a lost step lock, an outage) and a world that another step changed in between.
 */

/** Outcomes only the perform can meet: a dry run predicts the start (or the write) they interrupt. */
const PERFORM_TIME: ReadonlySet<StepReason> = new Set<StepReason>([
  'Conflict',
  'StepLockHeld',
  'StepLockLost',
  'Unavailable',
  'WaitingForRunLease',
  'WaitingForClusterOperation',
  'WaitingForMachineOperations',
  'WaitingForJobSlot',
  'WaitingForForeignJob',
  'WriteRefused',
  'NamespaceTerminating',
  'OutputsInvalid',
]);

/**
 * Waits of the dry run on something the garbage collector is removing (the pods of an earlier attempt whose
 * Job was deleted): gone a moment later, the real step rightly goes ahead. The reverse (the real step waits
 * where the dry run went ahead) is never forgiven: such pods do not come back.
 */
const VANISHING: ReadonlySet<StepReason> = new Set<StepReason>(['WaitingForPreviousAttempt']);

/** The part of an outcome both must agree on. */
function decision(outcome: Pick<StepOutcome, 'action' | 'reason' | 'job'>): string {
  return `${outcome.action}/${outcome.reason}${outcome.job ? `/${outcome.job}` : ''}`;
}

/**
 * A start the perform moved past the Job the dry run named: another's finished Job held that name
 * (DESIGN.md section 5 step 8), which only the create finds out. Same action and reason; the real step's
 * message names the skipped Job.
 */
function skippedForeignJob(dry: StepOutcome, real: StepOutcome): boolean {
  return (
    dry.action === 'created' &&
    real.action === 'created' &&
    dry.reason === real.reason &&
    real.message?.includes(`skipped ${dry.job}`) === true
  );
}

/** Throws when a dry run and the real step that followed it decided differently. */
export function assertSameDecision(ref: ObjectRef, dry: StepOutcome, real: StepOutcome): void {
  if (PERFORM_TIME.has(real.reason) || dry.action === 'unavailable') return;
  if (skippedForeignJob(dry, real)) return;
  if (VANISHING.has(dry.reason) && !VANISHING.has(real.reason)) return;
  if (decision(dry) === decision(real)) return;
  throw new Error(
    `dry run and step of ${ref.kind}/${ref.name} decided differently: dry ${decision(dry)} (${dry.message ?? ''}), real ${decision(real)} (${real.message ?? ''})`,
  );
}

/** An app whose `/reconcile` runs `step` (only dry runs are sent to it: nothing is scheduled). */
function dryRunApp(step: ReconcileStep): FastifyInstance {
  const metrics = createMetrics(
    {
      jobTotals: async () => [],
      jobsActive: async () => 0,
      lastSuccesses: async () => [],
      objects: async () => [],
      sizes: async () => [],
    },
    () => undefined,
  );
  const nothing = async () => undefined;
  return buildApp({
    config: {
      auth: { mode: 'disabled' },
      bodyLimitBytes: 64 * 1024,
      tickBudgetMs: 1000,
      tickConcurrency: 1,
      tickBatch: 1,
      watchNamespaces: [],
    },
    logger: pino({ level: 'silent' }),
    settle: createSettle({
      step,
      schedule: { add: nothing },
      dedupe: { remember: nothing },
      dependents: NO_DEPENDENTS,
      metrics,
      clock: Date.now,
    }),
    schedule: { add: nothing, ensure: nothing, claimDue: async () => [], complete: nothing },
    dedupe: {
      seen: async () => false,
      remember: nothing,
      ownWrite: async () => false,
      stepRunning: async () => false,
    },
    versions: { versionOf: async () => undefined },
    newest: NO_NEWEST,
    owners: { resolve: async () => ({ found: false, reason: 'ObjectGone' }) },
    clusterMembers: { toWake: async () => ({ found: false, reason: 'ObjectGone' }) },
    dependents: NO_DEPENDENTS,
    readiness: async () => ({ redis: { ok: true }, apiServer: { ok: true } }),
    metrics,
    sweep: async () => ({ state: 'skipped', reason: 'NotDueOrHeldElsewhere' }),
    clock: Date.now,
  });
}

/** Steps completed per object, to tell a dry run that another step overtook. */
const completed = new Map<string, number>();

/** `step` with every call preceded by a dry run over HTTP that must decide the same. */
export function shadowedByDryRun(step: ReconcileStep): ReconcileStep {
  const app = dryRunApp(step);
  return async (ref, options) => {
    if (options?.dryRun === true) return step(ref, options);
    const key = `${ref.kind}/${ref.namespace}/${ref.name}`;
    const before = completed.get(key) ?? 0;
    const answer = await app.inject({
      method: 'POST',
      url: `/reconcile/${ref.kind}/${ref.namespace}/${ref.name}?dryRun=true`,
    });
    const dry = (answer.json() as { outcome: StepOutcome }).outcome;
    const real = await step(ref, options);
    const after = (completed.get(key) ?? 0) + 1;
    completed.set(key, after);
    // Another step of the same object finished in between: the dry run described another world.
    if (after === before + 1) assertSameDecision(ref, dry, real);
    return real;
  };
}
