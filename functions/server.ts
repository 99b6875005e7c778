import type { FastifyInstance } from 'fastify';
import { createHandlers, type StepFactory } from './handlers.ts';
import { withRunnerImageFromPod } from './runner-image.ts';

/**
 * The Knative / container server (DESIGN.md section 15): builds the handlers once, listens on PORT, and on
 * SIGTERM stops taking requests, finishes the steps in flight and closes the clients. Knative sends
 * SIGTERM and waits `terminationGracePeriodSeconds`.
 */

/** A running server. */
export interface RunningServer {
  app: FastifyInstance;
  /** `http://host:port` actually bound (PORT=0 picks a free port). */
  url: string;
  /** Graceful stop: in-flight steps finish, then the clients close. */
  stop(): Promise<void>;
}

/**
 * Starts the server. Throws (with every problem listed) when the configuration is invalid. Signals are
 * handled only when `handleSignals` is set (the process entry point), so tests can run several servers.
 */
export async function runServer(
  env: Record<string, string | undefined>,
  createStep: StepFactory,
  options: { handleSignals: boolean } = { handleSignals: true },
): Promise<RunningServer> {
  // The always-on Deployment names the runner image by a container of its pod (functions/runner-image.ts).
  const { app, config, logger, ready, close } = createHandlers(await withRunnerImageFromPod(env), createStep);
  await ready();
  const url = await app.listen({ port: config.port, host: config.host });
  const stop = async () => {
    logger.info('server: stopping; finishing steps in flight');
    await close();
  };
  if (options.handleSignals) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        void stop().then(() => process.exit(0));
      });
    }
  }
  logger.info({ url, auth: config.auth.mode }, 'server: listening');
  return { app, url, stop };
}
