import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redisEnvOf } from '../adapters/redis/topology.ts';
import { type Balancer, startBalancer } from './balancer.ts';
import { applyClusterResources } from './cluster-resources.ts';
import { DEDICATED_TAINT_KEY } from './dedicated-node.ts';
import { type KnativeSources, startKnativeSources } from './knative-sources.ts';
import { type Kubectl, kubectlFor } from './kubectl.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from './process.ts';
import { type RealNode, startRealNode } from './real-node/real-node.ts';
import { ensureRunnerBuilt } from './runner-build.ts';
import type { StackInfo } from './stack.ts';

/**
 * Everything of the local run on top of a running stack (DESIGN.md section 15), in one function used by
 * the main job (`node src/local/cli.ts up`) and the end-to-end tests, so both run the same thing:
 * the CRDs and the approval policy, the runner executable, the local node, the handlers with the real
 * reconcile step, and the event path: the bundled relay (watch → CloudEvents → `/events`) with its local
 * timer (`/tick`), or Knative's own ApiServerSource and PingSource adapters (src/local/knative-sources.ts).
 * Node, handlers and event path are child processes with their logs in `<logDir>/<name>.log`.
 */

/** The event paths of the local run: the bundled relay, or Knative's own source adapters. */
export const LOCAL_EVENT_PATHS = ['relay', 'knative'] as const;
export type LocalEventPath = (typeof LOCAL_EVENT_PATHS)[number];

/** The controller's `--runner-image` in the local run: the real node's registry serves it (src/local/real-node/images.ts). */
export const LOCAL_RUNNER_IMAGE = 'captf.local/runner:dev';

/** Options of {@link startLocalController}. */
export interface LocalControllerOptions {
  stack: StackInfo;
  /** Where the node's pod directories and the logs go. */
  workDir: string;
  /** Node name; default `captf-local-node`. Tests pin their Jobs to it with `spec.jobs.nodeSelector`. */
  nodeName?: string;
  /** Prefix of the controller's Redis keys; default `captf`. Tests use their own. */
  keyPrefix?: string;
  /**
   * Local timer interval, ms; default 2000 (a PingSource fires once a minute; locally we want speed). With
   * Knative's adapters it becomes the PingSource's schedule (`@every <n>s`, whole seconds).
   */
  tickIntervalMs?: number;
  /** The event path; default the bundled relay. */
  events?: LocalEventPath;
  /**
   * Namespaces the handlers reconcile and the relay watches (`CAPTF_WATCH_NAMESPACES`); default all. Tests
   * sharing one API server name their own, so no run steps another's leftovers.
   */
  watchNamespaces?: readonly string[];
  /** The sweep period, seconds; default 60. */
  syncPeriodSeconds?: number;
  /** The handlers' pino level; default `info` (`debug` logs every step, as tests that count steps need). */
  logLevel?: 'info' | 'debug';
  /** Image directories the node searches after the local images (tests add test/fixtures/images). */
  imageDirs?: readonly string[];
  /**
   * Handler processes; default 1 (`npm start`, the tests: one `controller.log`). With more, each listens on
   * its own port (logs `controller-<i>.log`) behind a loopback round-robin balancer (src/local/balancer.ts)
   * that the relay and timer send to, as several instances of the Knative Service would share the load.
   */
  handlers?: number;
  /**
   * What the handler processes run: `source` (src/local/controller-main.ts, failpoints armable; default) or
   * `bundle`, the controller image's entry point (dist/controller/server.mjs, built by the caller: the
   * fleet bench measures what production runs).
   */
  entry?: 'source' | 'bundle';
  log?: (line: string) => void;
}

/** The running controller of the local run. */
export interface LocalController {
  /** Base URL of the handlers, `http://127.0.0.1:<port>` (the balancer's with several handlers). */
  url: string;
  /** Each handler process and its own base URL (one entry with one handler). */
  handlers: { process: ManagedProcess; url: string }[];
  /** The balancer in front of several handlers; undefined with one. */
  balancer: Balancer | undefined;
  /**
   * Bearer token of the mutating routes (generated for this run; never logged). Undefined with Knative's
   * adapters: run outside Knative's controllers they can mint no OIDC token (the shipped Knative Service
   * checks those, issue 16), so auth is then disabled explicitly, for this local run only.
   */
  token: string | undefined;
  nodeName: string;
  /** The real node that runs the Job pods (kubelet, containerd, runc): its registry and image digests. */
  realNode: RealNode;
  /** Knative's adapters, when they are the event path. */
  knative: KnativeSources | undefined;
  logDir: string;
  kubectl: Kubectl;
  /** Stops the event path (relay or Knative's adapters), handlers and node, in that order, and waits. */
  stop(): Promise<void>;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** How long each component may take to become ready, ms. */
const READY_TIMEOUT_MS = 60_000;
/** Grace of each child on stop, ms: the node kills its containers, the handlers finish their steps. */
const STOP_GRACE_MS = 15_000;

/** Node flags of every child: exit when the local run's process goes away (exit-with-parent.ts). */
export const CHILD_NODE_FLAGS = ['--import', join(repoRoot, 'src', 'local', 'exit-with-parent.ts')];

/** Environment of a child: the parent's, minus anything that would point it at another cluster or Redis. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const {
    KUBECONFIG: _kubeconfig,
    REDIS_URL: _url,
    REDIS_CLUSTER_NODES: _cluster,
    REDIS_SENTINELS: _sentinels,
    REDIS_SENTINEL_MASTER: _master,
    REDIS_USERNAME: _redisUser,
    REDIS_PASSWORD: _redisPassword,
    CAPTF_AUTH_TOKEN: _token,
    CAPTF_AUTH_DISABLED: _disabled,
    CAPTF_AUTH_AUDIENCE: _audience,
    CAPTF_AUTH_ALLOWED_USERS: _users,
    ...rest
  } = process.env;
  return { ...rest, ...extra };
}

/**
 * Starts the local run's controller on `options.stack`. Throws (after stopping what it started) when a
 * component fails to start; the error carries that component's log tail.
 */
export async function startLocalController(options: LocalControllerOptions): Promise<LocalController> {
  const { stack } = options;
  const log = options.log ?? (() => undefined);
  const nodeName = options.nodeName ?? 'captf-local-node';
  const keyPrefix = options.keyPrefix ?? 'captf';
  const watched: Record<string, string> =
    options.watchNamespaces === undefined || options.watchNamespaces.length === 0
      ? {}
      : { CAPTF_WATCH_NAMESPACES: options.watchNamespaces.join(',') };
  const logDir = join(options.workDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const kubectl = kubectlFor(stack.kubectlPath, stack.kubeconfigPath);

  log('applying the CRDs and the admission policies (kubectl apply)');
  await applyClusterResources(kubectl, repoRoot);
  await ensureRunnerBuilt(repoRoot, log);

  const events = options.events ?? 'relay';
  const tickIntervalMs = options.tickIntervalMs ?? 2000;
  const started: ManagedProcess[] = [];
  let knative: KnativeSources | undefined;
  let balancer: Balancer | undefined;
  const handlerCount = options.handlers ?? 1;
  if (!Number.isInteger(handlerCount) || handlerCount < 1)
    throw new Error(`start the local controller: handlers must be a whole number ≥ 1 (got ${handlerCount})`);
  const handlerProcesses = new Set<ManagedProcess>();
  let realNode: RealNode | undefined;
  const stop = async (): Promise<void> => {
    await knative?.stop();
    for (const proc of [...started].reverse()) {
      // The balancer goes after the event path that sends to it, before the handlers behind it.
      if (handlerProcesses.has(proc) && balancer !== undefined) {
        await balancer.close();
        balancer = undefined;
      }
      await proc.stop(STOP_GRACE_MS);
    }
    await realNode?.stop();
  };
  try {
    log(`starting the node ${nodeName} (kubelet, containerd, runc)`);
    // A test run names its own node and pins its Jobs to it; the main job's node runs every pod.
    const dedicated = options.nodeName !== undefined;
    realNode = await startRealNode({
      stack,
      dir: join(options.workDir, 'node'),
      logDir,
      nodeName,
      ...(dedicated ? { taints: [{ key: DEDICATED_TAINT_KEY, value: nodeName, effect: 'NoSchedule' }] } : {}),
      ...(options.imageDirs === undefined ? {} : { imageDirs: options.imageDirs }),
      log,
    });

    const token = events === 'knative' ? undefined : randomBytes(32).toString('base64url');
    const auth: Record<string, string> =
      token === undefined ? { CAPTF_AUTH_DISABLED: 'true' } : { CAPTF_AUTH_TOKEN: token };
    log(
      `starting ${handlerCount === 1 ? 'the handlers' : `${handlerCount} handler processes`} (functions/server.ts with the real reconcile step; Redis: ${stack.redis.kind})`,
    );
    const handlers: LocalController['handlers'] = [];
    for (let index = 1; index <= handlerCount; index += 1) {
      const port = await freePort();
      const handler = startProcess(
        handlerCount === 1 ? 'controller' : `controller-${index}`,
        process.execPath,
        [
          ...CHILD_NODE_FLAGS,
          options.entry === 'bundle'
            ? join(repoRoot, 'dist', 'controller', 'server.mjs')
            : join(repoRoot, 'src', 'local', 'controller-main.ts'),
        ],
        logDir,
        childEnv({
          PORT: String(port),
          HOST: '127.0.0.1',
          ...auth,
          ...redisEnvOf(stack.redis),
          KUBECONFIG: stack.kubeconfigPath,
          CAPTF_RUNNER_IMAGE: LOCAL_RUNNER_IMAGE,
          CAPTF_KEY_PREFIX: keyPrefix,
          ...watched,
          CAPTF_SYNC_PERIOD_SECONDS: String(options.syncPeriodSeconds ?? 60),
          LOG_LEVEL: options.logLevel ?? 'info',
          // Tells the instances apart in their Events' reportingInstance.
          ...(handlerCount === 1 ? {} : { HOSTNAME: `controller-${index}-${process.pid}` }),
        }),
      );
      started.push(handler);
      handlerProcesses.add(handler);
      handlers.push({ process: handler, url: `http://127.0.0.1:${port}` });
    }
    for (const handler of handlers) {
      await waitUntilHealthy(
        handler.process,
        'ready (/readyz)',
        async () => (await fetch(`${handler.url}/readyz`)).ok,
        READY_TIMEOUT_MS,
      );
    }
    if (handlerCount > 1) balancer = await startBalancer(handlers.map((handler) => handler.url));
    const url = balancer?.url ?? (handlers[0] as { url: string }).url;

    if (events === 'knative') {
      knative = await startKnativeSources({
        stack,
        kubectl,
        repoRoot,
        handlerUrl: url,
        logDir,
        tickSchedule: `@every ${Math.max(1, Math.round(tickIntervalMs / 1000))}s`,
        log,
      });
      return { url, handlers, balancer, token, nodeName, realNode, logDir, kubectl, knative, stop };
    }
    log('starting the relay (watch → /events) and the local timer (/tick)');
    const relay = startProcess(
      'relay',
      process.execPath,
      [...CHILD_NODE_FLAGS, join(repoRoot, 'functions', 'relay.ts')],
      logDir,
      childEnv({
        CAPTF_HANDLER_URL: url,
        ...auth,
        ...redisEnvOf(stack.redis),
        KUBECONFIG: stack.kubeconfigPath,
        CAPTF_KEY_PREFIX: keyPrefix,
        ...watched,
        // The local identity reads both: one relay watches our objects and the Secrets waits depend on.
        CAPTF_RELAY_WATCH: 'all',
        CAPTF_TICK_INTERVAL_MS: String(tickIntervalMs),
        HOSTNAME: `relay-${process.pid}`,
        LOG_LEVEL: 'info',
      }),
    );
    started.push(relay);
    await waitUntilHealthy(
      relay,
      'watching',
      async () => readFileSync(relay.logPath, 'utf8').includes('relay: lease taken'),
      READY_TIMEOUT_MS,
    );
    return { url, handlers, balancer, token, nodeName, realNode, logDir, kubectl, knative, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
