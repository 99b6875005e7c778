// `node src/local/controller-main.ts`: the handlers of the local run (DESIGN.md section 15), configured by
// the environment exactly as the Knative Service is (src/config.ts), with the real reconcile step. Started
// as a child process by src/local/local-controller.ts so its pino log goes to a file, not the terminal.

import { runServer, type StepFactory } from '../../functions/server.ts';
import { RequestCounter } from '../adapters/kube/request-count.ts';
import { parseFailpoints } from '../step/failpoints.ts';
import { createSpecWriter } from '../step/spec-patch.ts';
import { createReconcileStep } from '../step/step.ts';

/** Request timeout of the spec writer, as the adapter's default (src/adapters/kube/adapter.ts). */
const SPEC_WRITER_TIMEOUT_MS = 10_000;

/**
 * The real step over the server's adapters. The spec writer (Cluster API fields in `spec`) loads the same
 * kubeconfig the server does; failpoints come from `CAPTF_FAILPOINTS` and are none unless set.
 * Throws when `CAPTF_FAILPOINTS` names an unknown failpoint.
 */
export function localStepFactory(env: Record<string, string | undefined>): StepFactory {
  const failpoints = parseFailpoints(env.CAPTF_FAILPOINTS);
  if (!failpoints.ok) throw new Error(failpoints.message);
  return ({ kube, redis, clock, config, metrics }) =>
    createReconcileStep({
      kube,
      specWriter: createSpecWriter(
        env.KUBECONFIG === undefined ? { kind: 'in-cluster' } : { kind: 'file', path: env.KUBECONFIG },
        { requestTimeoutMs: SPEC_WRITER_TIMEOUT_MS, counter: new RequestCounter() },
      ),
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
