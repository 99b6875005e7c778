// `node src/local/controller-main.ts`: the handlers of the local run (DESIGN.md section 15), configured by
// the environment exactly as the Knative Service is (src/config.ts), with the real reconcile step. Started
// as a child process by src/local/local-controller.ts so its pino log goes to a file, not the terminal.

import type { StepFactory } from '../../functions/handlers.ts';
import { runServer } from '../../functions/server.ts';
import { parseFailpoints } from '../step/failpoints.ts';
import { createReconcileStep } from '../step/step.ts';

/**
 * The real step over the server's adapters and metrics; failpoints come from `CAPTF_FAILPOINTS` (and
 * `CAPTF_FAILPOINT_MODE`: `exit` makes a firing failpoint kill this process) and are none unless set.
 * Throws when `CAPTF_FAILPOINTS` names an unknown failpoint or `CAPTF_FAILPOINT_MODE` an unknown mode.
 */
export function localStepFactory(env: Record<string, string | undefined>): StepFactory {
  const failpoints = parseFailpoints(env.CAPTF_FAILPOINTS, env.CAPTF_FAILPOINT_MODE);
  if (!failpoints.ok) throw new Error(failpoints.message);
  return ({ kube, redis, clock, config, metrics }) =>
    createReconcileStep({
      kube,
      redis,
      clock,
      config,
      failpoints: failpoints.failpoints,
      metrics,
    });
}

if (import.meta.main) {
  const server = await runServer(process.env, localStepFactory(process.env)).catch((cause: Error) => {
    console.error(`[controller] error: ${cause.message}`);
    process.exit(1);
  });
  // The parent reads the bound address from this line (PORT=0 picks a free port).
  console.log(JSON.stringify({ msg: 'captf-local: listening', url: server.url }));
}
