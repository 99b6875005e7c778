import { preamble } from '../preamble.ts';
import { runnerSetupOf } from '../runner-setup.ts';
import type { StepPlan } from '../step-plan.ts';
import { bare, outcome, type Planning } from './context.ts';

/**
 * Before any Job (DESIGN.md section 5 step 2, preamble): an object managed elsewhere is left alone, one
 * not ours is not acted on, and ours gets the finalizer first (then the plan key and runner identity).
 */
export function planPreamble(planning: Planning): StepPlan | undefined {
  const { snap, facts, policy } = planning;
  const pre = preamble(snap.meta);
  if (pre.kind === 'leave-alone')
    return bare({ kind: 'none' }, outcome(planning, pre.reason, { message: pre.message }));
  if (pre.kind === 'not-ours') return bare({ kind: 'none' }, outcome(planning, pre.reason));
  if (pre.kind === 'add-finalizer') {
    const setup = runnerSetupOf(snap, policy, facts.config.stateEncryption);
    return bare(
      { kind: 'finalizers', finalizers: pre.finalizers, gone: false, ...(setup ? { setup } : {}) },
      outcome(planning, pre.reason),
    );
  }
  return undefined;
}
