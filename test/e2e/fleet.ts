import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleEntry } from '../../functions/bundle.ts';
import { redisEnvOf } from '../../src/adapters/redis/topology.ts';
import { type Balancer, startBalancer } from '../../src/local/balancer.ts';
import { applyClusterResources } from '../../src/local/cluster-resources.ts';
import { DEDICATED_TAINT_KEY } from '../../src/local/dedicated-node.ts';
import { type Kubectl, kubectlFor } from '../../src/local/kubectl.ts';
import { CHILD_NODE_FLAGS, childEnv, LOCAL_RUNNER_IMAGE } from '../../src/local/local-controller.ts';
import { freePort } from '../../src/local/ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from '../../src/local/process.ts';
import { startRealNode } from '../../src/local/real-node/real-node.ts';
import { ensureRunnerBuilt } from '../../src/local/runner-build.ts';
import { prepareWorkloadNamespace } from '../../src/local/workload-namespace.ts';
import { FAILPOINTS, type Failpoint, failpointExitLine } from '../../src/step/failpoints.ts';
import { testStack } from '../env/index.ts';
import { testTempDir } from '../env/temp-dir.ts';

/**
 * The local run with several handler processes behind a loopback round-robin balancer (issue 13 item 2),
 * started the way src/local/local-controller.ts starts its one handler, plus what the fault suite needs
 * and the local run does not offer: the handlers' and relay's KUBECONFIG and Redis chosen by the test (a
 * fault-injecting API proxy, a Redis it may kill), per-handler environment (failpoints), and a supervisor
 * that restarts a handler that died, counting the failpoints it died at.
 *
 * It does not call `startLocalController({ handlers })`: that starts every handler once with one
 * environment and has no supervisor. It shares its child flags and environment (`CHILD_NODE_FLAGS`,
 * `childEnv`) and the balancer (src/local/balancer.ts).
 */

const repoRoot = join(import.meta.dirname, '..', '..');
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 15_000;

/** Options of {@link startFleetRun}. */
export interface FleetOptions {
  label: string;
  /** How many handler processes; at least 1. */
  handlers: number;
  /** The Redis the handlers and the relay use, `redis://127.0.0.1:<port>`. */
  redisUrl: string;
  /** The kubeconfig of the handlers and the relay (a proxy's); default the stack's own. */
  kubeconfigPath?: string;
  /** Extra environment of handler `index` at each (re)start: failpoints. */
  handlerEnv?: (index: number) => Record<string, string>;
  /** The sweep period, seconds; default 60. */
  syncPeriodSeconds?: number;
  /** Local timer interval, ms; default 1000. */
  tickIntervalMs?: number;
}

/** One handler slot: its port and the process currently serving it. */
export interface HandlerSlot {
  index: number;
  /** The port of its current process: a fresh one at every (re)start (see `startReady` in startFleetRun). */
  port: number;
  url: string;
  process: ManagedProcess;
  /** How many times the supervisor restarted this slot. */
  restarts: number;
}

/** A running fleet on the test stack. */
export interface FleetRun {
  namespace: string;
  nodeName: string;
  keyPrefix: string;
  kubectl: Kubectl;
  /** The balancer's URL: what the relay and the timer call. */
  url: string;
  /** Bearer token of the mutating routes. */
  token: string;
  logDir: string;
  handlers: HandlerSlot[];
  /** Failpoints handler processes died at, with counts, from their logs. */
  deaths(): Map<Failpoint, number>;
  /** Log text of every handler (all their lives) and the relay. */
  logs(): string;
  /** Stops restarting handlers that die (before disarming failpoints). */
  superviseOff(): void;
  /** Restarts every handler with the current `handlerEnv` (e.g. after disarming). */
  restartHandlers(): Promise<void>;
  close(): Promise<void>;
}

/** Counts the failpoint exit lines in a handler log. */
function deathsIn(text: string, into: Map<Failpoint, number>): void {
  for (const point of FAILPOINTS) {
    const line = failpointExitLine(point);
    let at = text.indexOf(line);
    while (at >= 0) {
      // `after-lease-re…` names are prefixes of one another only at a word end: check the line ends.
      const end = text[at + line.length];
      if (end === '\n' || end === undefined) into.set(point, (into.get(point) ?? 0) + 1);
      at = text.indexOf(line, at + line.length);
    }
  }
}

/**
 * Starts the fleet on the test stack: CRDs and policies, the runner, a dedicated real node, `handlers`
 * handler processes (each `src/local/controller-main.ts`, the real step), the balancer, and the relay with
 * its timer calling the balancer; then a fresh namespace prepared as the main job prepares `team-a`.
 * Throws (after stopping what it started) when a component does not come up.
 */
export async function startFleetRun(options: FleetOptions): Promise<FleetRun> {
  const stack = testStack();
  const suffix = randomBytes(3).toString('hex');
  // Removed after the file's last test (the fleet stopped by then), a failed start's too.
  const workDir = testTempDir(`captf-e2e-${options.label}-`);
  const logDir = join(workDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const nodeName = `captf-e2e-${options.label}-${suffix}`;
  const keyPrefix = `e2e-${options.label}-${suffix}`;
  const namespace = `e2e-${options.label}-${suffix}`;
  const kubectl = kubectlFor(stack.kubectlPath, stack.kubeconfigPath);
  const kubeconfig = options.kubeconfigPath ?? stack.kubeconfigPath;
  const token = randomBytes(32).toString('base64url');
  const redisEnv = redisEnvOf({ kind: 'single', url: options.redisUrl });

  // The approval policy is cluster-wide and other files approve plans in another name: leave the shared
  // stack as it was found (as test/e2e/harness.ts does).
  const policyFile = join(repoRoot, 'infra', 'admission', 'approval-policy.yaml');
  const policyBefore = await kubectl
    .run(['get', '-f', policyFile, '-o', 'name'])
    .then(() => true)
    .catch(() => false);
  await applyClusterResources(kubectl, repoRoot);
  await ensureRunnerBuilt(repoRoot, () => undefined);
  // One esbuild bundle of the local handler entry (the real step, failpoints read from the environment):
  // a restarted handler is back in about a second, where loading the TypeScript sources takes ten on a
  // busy 2-core machine, and a killed handler's slot would be dark most of the scenario.
  const handlerBundle = join(workDir, 'controller-main.mjs');
  await bundleEntry(join('src', 'local', 'controller-main.ts'), handlerBundle, { root: repoRoot });
  // A real node of its own (kubelet, containerd, runc), tainted for this run's Jobs only.
  const node = await startRealNode({
    stack,
    dir: join(workDir, 'node'),
    logDir,
    nodeName,
    taints: [{ key: DEDICATED_TAINT_KEY, value: nodeName, effect: 'NoSchedule' }],
  });

  /** Handler `index` on `port`: its process and address. */
  const startHandler = (index: number, port: number): Pick<HandlerSlot, 'port' | 'url' | 'process'> => ({
    port,
    url: `http://127.0.0.1:${port}`,
    process: startProcess(
      `handler-${index}`,
      process.execPath,
      [...CHILD_NODE_FLAGS, handlerBundle],
      logDir,
      childEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        CAPTF_AUTH_TOKEN: token,
        ...redisEnv,
        KUBECONFIG: kubeconfig,
        CAPTF_RUNNER_IMAGE: LOCAL_RUNNER_IMAGE,
        CAPTF_KEY_PREFIX: keyPrefix,
        CAPTF_WATCH_NAMESPACES: namespace,
        CAPTF_SYNC_PERIOD_SECONDS: String(options.syncPeriodSeconds ?? 60),
        LOG_LEVEL: 'info',
        ...options.handlerEnv?.(index),
      }),
    ),
  });
  /**
   * Starts handler `index` on a fresh free port and waits until it is ready; a start that lost its port is
   * retried, and one that fails otherwise is stopped before the error goes up. Never the port a predecessor
   * freed: on a busy machine another process's outgoing connection can take a just-freed ephemeral port, and
   * the handler then exits on EADDRINUSE (seen once in CI). The balancer reads each slot's url per request.
   */
  const startReady = async (index: number): Promise<Pick<HandlerSlot, 'port' | 'url' | 'process'>> => {
    for (let attempt = 1; ; attempt += 1) {
      const started = startHandler(index, await freePort());
      try {
        await waitUntilHealthy(
          started.process,
          'ready (/readyz)',
          async () => (await fetch(`${started.url}/readyz`)).ok,
          READY_TIMEOUT_MS,
        );
        return started;
      } catch (error) {
        await started.process.stop(STOP_GRACE_MS);
        if (attempt >= 3 || !started.process.tail(5).includes('EADDRINUSE')) throw error;
      }
    }
  };

  const handlers: HandlerSlot[] = [];
  let supervising = true;
  let closing = false;
  const supervise = (slot: HandlerSlot): void => {
    const current = slot.process;
    void current.exited.then(async () => {
      const port = await freePort();
      if (closing || !supervising || slot.process !== current) return;
      // A supervisor restarts at once, as a kubelet restarts a crashed container (without its backoff);
      // one that exits at once (its port taken) is restarted again.
      Object.assign(slot, startHandler(slot.index, port));
      slot.restarts += 1;
      supervise(slot);
    });
  };
  let relay: ManagedProcess | undefined;
  let balancer: Balancer | undefined;
  const stopAll = async (): Promise<void> => {
    closing = true;
    await relay?.stop(STOP_GRACE_MS);
    await Promise.all(handlers.map((slot) => slot.process.stop(STOP_GRACE_MS)));
    await balancer?.close();
    await node.stop();
  };
  try {
    for (let index = 0; index < options.handlers; index += 1)
      handlers.push({ index, restarts: 0, ...(await startReady(index)) });
    for (const slot of handlers) supervise(slot);
    const lb = await startBalancer(() => handlers.map((slot) => slot.url));
    balancer = lb;
    relay = startProcess(
      'relay',
      process.execPath,
      [...CHILD_NODE_FLAGS, join(repoRoot, 'functions', 'relay.ts')],
      logDir,
      childEnv({
        CAPTF_HANDLER_URL: lb.url,
        CAPTF_AUTH_TOKEN: token,
        ...redisEnv,
        KUBECONFIG: kubeconfig,
        CAPTF_KEY_PREFIX: keyPrefix,
        CAPTF_WATCH_NAMESPACES: namespace,
        // The local identity reads both: one relay watches our objects and the Secrets waits depend on.
        CAPTF_RELAY_WATCH: 'all',
        CAPTF_TICK_INTERVAL_MS: String(options.tickIntervalMs ?? 1000),
        HOSTNAME: `relay-${process.pid}`,
        LOG_LEVEL: 'info',
      }),
    );
    const relayProcess = relay;
    await waitUntilHealthy(
      relayProcess,
      'watching',
      async () => readFileSync(relayProcess.logPath, 'utf8').includes('relay: lease taken'),
      READY_TIMEOUT_MS,
    );
    await prepareWorkloadNamespace(kubectl, namespace, stack);
    const logs = (): string =>
      [...handlers.map((slot) => slot.process.logPath), relayProcess.logPath]
        .map((path) => {
          try {
            return readFileSync(path, 'utf8');
          } catch {
            return '';
          }
        })
        .join('\n');
    return {
      namespace,
      nodeName,
      keyPrefix,
      kubectl,
      url: lb.url,
      token,
      logDir,
      handlers,
      deaths: () => {
        const counts = new Map<Failpoint, number>();
        for (const slot of handlers) {
          try {
            deathsIn(readFileSync(slot.process.logPath, 'utf8'), counts);
          } catch {
            // No log yet: no deaths.
          }
        }
        return counts;
      },
      logs,
      superviseOff: () => {
        supervising = false;
      },
      restartHandlers: async () => {
        supervising = false;
        for (const slot of handlers) {
          await slot.process.stop(STOP_GRACE_MS);
          Object.assign(slot, await startReady(slot.index));
        }
        supervising = true;
        for (const slot of handlers) supervise(slot);
      },
      close: async () => {
        // Stopped first, as in test/e2e/harness.ts: a running controller would put the finalizers back.
        await stopAll();
        for (const resource of ['terraformclusters', 'terraformmachines', 'terraformmachinepools']) {
          const names = await kubectl.run(['get', resource, '-n', namespace, '-o', 'name']).catch(() => '');
          if (names.trim() === '') continue;
          await kubectl
            .run([
              'patch',
              ...names.split('\n').filter(Boolean),
              '-n',
              namespace,
              '--type=merge',
              '-p',
              '{"metadata":{"finalizers":null}}',
            ])
            .catch(() => undefined);
        }
        if (!policyBefore)
          await kubectl.run(['delete', '-f', policyFile, '--ignore-not-found']).catch(() => undefined);
        await kubectl.run(['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
