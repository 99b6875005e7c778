import type { Op, StepName } from '../schemas/result.ts';

/**
 * The Terraform steps of each op and their command lines (DESIGN.md section 10). Every step runs with
 * `-input=false` where the command has it, `-no-color`, and `-json` where the command has it, so the runner
 * reads diagnostics, plans and outputs from Terraform's machine-readable output; every step that takes the
 * state lock gets `-lock-timeout`.
 */

/** Steps that run the runtime binary (everything but the runner's own `prepare`). */
export type TofuStep = Exclude<StepName, 'prepare'>;

/** The steps of each op after `prepare`, in order; `force-unlock` runs only when the controller passed an id. */
export const OP_STEPS: Record<Op, readonly TofuStep[]> = {
  apply: ['init', 'force-unlock', 'validate', 'plan', 'show-json', 'apply'],
  destroy: ['init', 'force-unlock', 'destroy'],
  refresh: ['init', 'force-unlock', 'apply-refresh-only'],
  drift: ['init', 'force-unlock', 'plan'],
};

/** Files and settings a step's command line refers to; paths are absolute. */
export interface StepInputs {
  lockTimeoutSeconds: number;
  /** The generated `-var-file` (JSON). */
  varFile: string;
  /** The generated `-backend-config` file; absent when the run config has no backend. */
  backendConfigFile?: string;
  /** Where `plan` saves the plan that `show-json` reads and `apply` applies. */
  planFile: string;
  forceUnlockId?: string;
}

/** How a step's output is read. */
export type OutputForm = 'ui-stream' | 'validate-document' | 'plan-document' | 'outputs-document' | 'text';

/** One step's command: arguments, how to read its output, and which exit codes count as success. */
export interface StepCommand {
  args: string[];
  output: OutputForm;
  /** Exit codes that mean the step did its job; `all` for a best-effort step. */
  okExits: readonly number[] | 'all';
}

/** Builds the command of one step of one op; pure. */
export function stepCommand(op: Op, step: TofuStep, inputs: StepInputs): StepCommand {
  const lock = `-lock-timeout=${inputs.lockTimeoutSeconds}s`;
  const vars = `-var-file=${inputs.varFile}`;
  const common = ['-input=false', '-no-color', '-json'];
  switch (step) {
    case 'init': {
      const backend =
        inputs.backendConfigFile === undefined ? [] : [`-backend-config=${inputs.backendConfigFile}`];
      return { args: ['init', ...common, lock, ...backend], output: 'ui-stream', okExits: [0] };
    }
    case 'force-unlock':
      // Best effort (DESIGN.md section 12): "already unlocked" or an id that no longer matches is not an
      // error, and a failed unlock leaves the lock to the next locking step, which reports it with its info.
      return { args: ['force-unlock', '-force', inputs.forceUnlockId ?? ''], output: 'text', okExits: 'all' };
    case 'validate':
      return { args: ['validate', '-no-color', '-json'], output: 'validate-document', okExits: [0] };
    case 'plan':
      return op === 'drift'
        ? // -detailed-exitcode: 2 means changes present, which for a drift check is a finding, not a failure.
          {
            args: ['plan', '-detailed-exitcode', ...common, lock, vars],
            output: 'ui-stream',
            okExits: [0, 2],
          }
        : {
            args: ['plan', ...common, lock, vars, `-out=${inputs.planFile}`],
            output: 'ui-stream',
            okExits: [0],
          };
    case 'show-json':
      return { args: ['show', '-no-color', '-json', inputs.planFile], output: 'plan-document', okExits: [0] };
    case 'apply':
      // The saved plan only: no variables (a saved plan carries them) and no -auto-approve needed.
      return { args: ['apply', ...common, lock, inputs.planFile], output: 'ui-stream', okExits: [0] };
    case 'destroy':
      return { args: ['destroy', '-auto-approve', ...common, lock, vars], output: 'ui-stream', okExits: [0] };
    case 'apply-refresh-only':
      return {
        args: ['apply', '-refresh-only', '-auto-approve', ...common, lock, vars],
        output: 'ui-stream',
        okExits: [0],
      };
    case 'output':
      // Every root output with its value, sensitive ones included (issue 24 item 3): read, never relayed.
      return { args: ['output', '-no-color', '-json'], output: 'outputs-document', okExits: [0] };
  }
}
