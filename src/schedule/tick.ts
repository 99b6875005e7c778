import type { BaseLogger } from 'pino';
import type { StepAction } from '../core/step-outcome.ts';
import { type WatchNamespaces, watchesNamespace } from '../core/watch-scope.ts';
import type { Claim, RequeueSchedule } from '../settle/ports.ts';
import type { Settle } from '../settle/settle.ts';
import { runBounded } from './pool.ts';
import type { SweepReport } from './sweep.ts';

/**
 * One `/tick` (DESIGN.md section 8): claim due requeues, run their steps with bounded concurrency inside a
 * time budget, complete each claim with the next due time its outcome asks for, then run the sweep when due.
 */

/** A step that threw (a bug, by the contract) is looked at again after this long, in ms. */
export const FAILED_STEP_RETRY_MS = 60_000;
/** Extra visibility beyond the budget, so a claim outlives the call that holds it, in ms. */
const CLAIM_MARGIN_MS = 30_000;

export interface TickDeps {
  schedule: RequeueSchedule;
  /** Runs and settles one step; the tick completes its claim with the next due time itself. */
  settle: Settle;
  /** Runs the sweep if it is due and nobody else runs it (src/schedule/sweep.ts). */
  sweep: (nowMs: number) => Promise<SweepReport>;
  /** Milliseconds since the epoch. */
  clock: () => number;
  logger: Pick<BaseLogger, 'debug' | 'info' | 'warn' | 'error'>;
  budgetMs: number;
  concurrency: number;
  batch: number;
  /**
   * `CAPTF_WATCH_NAMESPACES`: a requeue of an object outside them (scheduled before the installation was
   * narrowed) is dropped without a step, so it is not stepped and requeued for ever.
   */
  watched: WatchNamespaces;
}

/** What one tick did; counts only, no object data. */
export interface TickReport {
  claimed: number;
  completed: number;
  /** Claims handed back because the budget ran out before their step started. */
  handedBack: number;
  /** Steps that threw (bugs) or claims that could not be completed. */
  failed: number;
  /** Requeues of objects outside the watched namespaces, removed without a step. */
  dropped: number;
  byAction: Partial<Record<StepAction, number>>;
  sweep: SweepReport;
}

/** A tick that claimed nothing and ran no sweep: the system is at rest, and the tick changed nothing. */
export function isIdleTick(report: TickReport): boolean {
  return report.claimed === 0 && report.sweep.state === 'skipped';
}

/**
 * Runs one tick. Throws UnavailableError when the schedule cannot be claimed (the route answers 503);
 * failures after the claim are counted, logged and left to the claim's visibility timeout.
 */
export async function runTick(deps: TickDeps): Promise<TickReport> {
  const startMs = deps.clock();
  const deadlineMs = startMs + deps.budgetMs;
  const claims = await deps.schedule.claimDue(startMs, deps.batch, deps.budgetMs + CLAIM_MARGIN_MS);
  const byAction: Partial<Record<StepAction, number>> = {};
  let dropped = 0;
  const results = await runBounded(
    claims,
    deps.concurrency,
    () => deps.clock() < deadlineMs,
    async (claim: Claim) => {
      if (!watchesNamespace(deps.watched, claim.ref.namespace)) {
        await deps.schedule.complete(claim, undefined);
        dropped++;
        return;
      }
      const { outcome, resolved } = await deps.settle(claim.ref, { log: deps.logger, claimed: true });
      byAction[outcome.action] = (byAction[outcome.action] ?? 0) + 1;
      await deps.schedule.complete(claim, resolved.claimNextDueAtMs);
    },
  );
  let completed = 0;
  let handedBack = 0;
  let failed = 0;
  for (const result of results) {
    if (result.state === 'done') completed++;
    else if (result.state === 'not-started') {
      handedBack++;
      await deps.schedule.complete(result.item, startMs).catch((error: unknown) => {
        deps.logger.warn({ err: error, ...result.item.ref }, 'hand back claim: failed; it reappears later');
      });
    } else {
      failed++;
      deps.logger.error({ err: result.error, ...result.item.ref }, 'tick step: failed');
      await deps.schedule.complete(result.item, deps.clock() + FAILED_STEP_RETRY_MS).catch(() => {
        // The claim's visibility timeout brings it back; nothing else to do.
      });
    }
  }
  const sweep = await deps.sweep(deps.clock());
  return { claimed: claims.length, completed, handedBack, failed, dropped, byAction, sweep };
}
