import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { type EnvSources, envReferences, resolveEnv } from './container-env.ts';
import { launchPlan } from './container-launch.ts';
import type { ContainerFilesystem } from './container-paths.ts';
import { type ContainerProcess, findExecutable, startContainerProcess } from './container-process.ts';
import { createRootfs, type LocalImage, type PullResult } from './image-store.ts';
import type { NodeApi } from './node-api.ts';
import { type ContainerState, type PodRuntime, podStatus } from './pod-status.ts';
import { setUpVolumes } from './pod-volumes.ts';
import { type PullBackoffConfig, pullRetryStep } from './pull-backoff.ts';
import { terminationMessage } from './termination-message.ts';

/**
 * One pod on the local node, from acceptance to its terminal status: volumes, init containers in order,
 * then the app containers, each pulled, configured and run as a host process; deletion and
 * `activeDeadlineSeconds` end it with SIGTERM, the grace period, then SIGKILL (the kubelet's pod worker,
 * pkg/kubelet/pod_workers.go, for `restartPolicy: Never`).
 */

/** What a pod worker needs from the node. */
export interface PodWorkerContext {
  api: NodeApi;
  /** Pulls `image` (the reference as written in the pod spec). */
  pull(image: string): PullResult | { kind: 'invalid'; message: string };
  /** `image@digest` reference the node reports as `imageID` for a pulled image. */
  imageId(image: LocalImage): string;
  /** Directory that holds `<pod uid>/` work directories. */
  podsDir: string;
  pullBackoff: PullBackoffConfig;
  /** Run each container in a UTS namespace with the pod's hostname. */
  setHostname: boolean;
  /** Variables every container gets before its image's and its own (PATH, the `kubernetes` service). */
  baseEnv: ReadonlyMap<string, string>;
  /** Milliseconds between retries of a failed mount or a container config error (kubelet: ~2 s). */
  retryMs: number;
  now: () => Date;
  log: (line: string) => void;
}

/** Host file that holds the output of container `name` of pod `uid` (the kubelet's log file). */
export function containerLogPath(podsDir: string, uid: string, name: string): string {
  return join(podsDir, uid, 'containers', name, 'log');
}

/** The handle the node keeps per pod. */
export interface PodWorker {
  /** Feeds a newer version of the pod (deletion is noticed here). */
  update(pod: V1Pod): void;
  /** The status the node reports for the pod now (what the kubelet's log endpoint decides from). */
  status(): V1PodStatus;
  /** The pod object is gone (force-deleted): kill everything at once, write nothing. */
  abandon(): void;
  /** The node stops: SIGTERM, a short grace, SIGKILL; write nothing. */
  shutdown(): Promise<void>;
  /** Resolves when the pod reached its terminal status (and was deleted, if deletion was asked). */
  done: Promise<void>;
}

/** Why the node ends a pod before its containers finish. */
type TerminationReason = 'deleted' | 'deadline';
type ContainerOutcome = { kind: 'exited'; exitCode: number } | { kind: 'not-started' };

const podHostname = (pod: V1Pod): string => (pod.spec?.hostname ?? pod.metadata?.name ?? 'pod').slice(0, 63);

/** Starts the worker of `pod`, which the node has not run before. */
export function startPodWorker(initial: V1Pod, ctx: PodWorkerContext): PodWorker {
  let pod = initial;
  const uid = pod.metadata?.uid ?? '';
  const label = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const podDir = join(ctx.podsDir, uid);
  const spec = pod.spec ?? { containers: [] };
  const initSpecs = spec.initContainers ?? [];
  const appSpecs = spec.containers;
  const containerCount = initSpecs.length + appSpecs.length;
  const startTime = pod.status?.startTime ? new Date(pod.status.startTime) : ctx.now();
  const runtime: PodRuntime = {
    startTime,
    sandboxReady: false,
    init: initSpecs.map(() => ({ kind: 'waiting', reason: 'PodInitializing' })),
    app: appSpecs.map(() => ({
      kind: 'waiting',
      reason: initSpecs.length > 0 ? 'PodInitializing' : 'ContainerCreating',
    })),
    deadlineExceeded: false,
    stopped: false,
  };
  /** Running container processes, with the name of the container each one is. */
  const processes = new Map<ContainerProcess, string>();
  const stopping = new AbortController();
  /** Set once the pod is being ended: when its remaining processes get SIGKILL (epoch ms). */
  let killAtMs: number | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let deadlineTimer: NodeJS.Timeout | undefined;
  let finished = false;
  let silent = false;

  /** Posts a kubelet Event on the pod, on one of its containers when `fieldPath` names one. */
  const event = (type: 'Normal' | 'Warning', reason: string, message: string, fieldPath?: string): void => {
    if (!silent) void ctx.api.recordEvent(pod, type, reason, message, fieldPath);
  };
  const initNames = new Set(initSpecs.map((container) => container.name));
  const fieldPathOf = (name: string): string =>
    initNames.has(name) ? `spec.initContainers{${name}}` : `spec.containers{${name}}`;

  // Status writes are serialised; each writes the runtime as it is when its turn comes. Answers false when
  // the write failed (an outage): a later write carries the same state, except after the last one.
  let writes: Promise<boolean> = Promise.resolve(true);
  const publish = (): Promise<boolean> => {
    writes = writes.then(async () => {
      if (silent) return true;
      try {
        const outcome = await ctx.api.writeStatus(pod, (live) => podStatus(live, runtime, ctx.now()));
        if (outcome === 'pod-gone') abandon();
        return true;
      } catch (cause) {
        ctx.log(`pod ${label}: status write failed: ${(cause as Error).message}`);
        return false;
      }
    });
    return writes;
  };

  const wait = async (ms: number): Promise<void> => {
    await sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);
  };
  const untilStopping = new Promise<void>((resolve) =>
    stopping.signal.addEventListener('abort', () => resolve()),
  );

  const killAll = (): void => {
    for (const proc of processes.keys()) proc.kill();
  };
  const scheduleKill = (killAtMs: number): void => {
    clearTimeout(killTimer);
    killTimer = setTimeout(killAll, Math.max(0, killAtMs - ctx.now().getTime()));
  };

  const requestTermination = (reason: TerminationReason, graceSeconds: number): void => {
    // A finished pod has nothing left to stop; the node only deletes its object.
    if (finished) return;
    const requestedKillAtMs = ctx.now().getTime() + graceSeconds * 1000;
    if (killAtMs !== undefined) {
      // A later request may only shorten the grace period (as a second delete with a smaller grace does).
      if (requestedKillAtMs < killAtMs) {
        killAtMs = requestedKillAtMs;
        scheduleKill(killAtMs);
      }
      return;
    }
    killAtMs = requestedKillAtMs;
    clearTimeout(deadlineTimer);
    stopping.abort();
    if (reason === 'deadline') {
      runtime.deadlineExceeded = true;
      event('Warning', 'DeadlineExceeded', 'Pod was active on the node longer than the specified deadline');
      // The kubelet reports Failed at once, while the containers are still being stopped (C08).
      void publish();
    }
    for (const [proc, name] of processes) {
      event('Normal', 'Killing', `Stopping container ${name}`, fieldPathOf(name));
      proc.terminate();
    }
    scheduleKill(requestedKillAtMs);
  };

  const abandon = (): void => {
    silent = true;
    stopping.abort();
    killAll();
  };

  const setState = (list: ContainerState[], index: number, state: ContainerState): Promise<boolean> => {
    list[index] = state;
    return publish();
  };

  const pullImage = async (
    container: V1Container,
    list: ContainerState[],
    index: number,
  ): Promise<LocalImage | undefined> => {
    const image = container.image ?? '';
    const fieldPath = fieldPathOf(container.name);
    // The node keeps no image cache (each container copies its image directory), so every container's
    // image is pulled: Pulling then Pulled, as a kubelet reports a pull it does (pkg/kubelet/images).
    for (let failures = 1; !stopping.signal.aborted; failures++) {
      const pullStart = ctx.now().getTime();
      const pulled = ctx.pull(image);
      if (pulled.kind === 'invalid') {
        event('Warning', 'InspectFailed', pulled.message, fieldPath);
        event('Warning', 'Failed', 'Error: InvalidImageName', fieldPath);
        await setState(list, index, { kind: 'waiting', reason: 'InvalidImageName', message: pulled.message });
        await untilStopping;
        return undefined;
      }
      event('Normal', 'Pulling', `Pulling image "${image}"`, fieldPath);
      if (pulled.kind === 'pulled') {
        const took = goDuration(ctx.now().getTime() - pullStart);
        event(
          'Normal',
          'Pulled',
          `Successfully pulled image "${image}" in ${took} (${took} including waiting)`,
          fieldPath,
        );
        return pulled.image;
      }
      const step = pullRetryStep(failures, ctx.pullBackoff);
      const message = `failed to pull and unpack image "${image}": ${pulled.message}`;
      event('Warning', 'Failed', `Failed to pull image "${image}": ${message}`, fieldPath);
      event('Warning', 'Failed', 'Error: ErrImagePull', fieldPath);
      await setState(list, index, { kind: 'waiting', reason: 'ErrImagePull', message });
      await wait(step.errImagePullMs);
      if (stopping.signal.aborted) break;
      event('Normal', 'BackOff', `Back-off pulling image "${image}"`, fieldPath);
      event('Warning', 'Failed', 'Error: ImagePullBackOff', fieldPath);
      await setState(list, index, {
        kind: 'waiting',
        reason: 'ImagePullBackOff',
        message: `Back-off pulling image "${image}": ErrImagePull: ${message}`,
      });
      await wait(step.backOffMs);
    }
    return undefined;
  };

  const resolveContainerEnv = async (
    container: V1Container,
    image: LocalImage,
    list: ContainerState[],
    index: number,
  ): Promise<[string, string][] | undefined> => {
    const base = new Map([...ctx.baseEnv, ...Object.entries(image.config.env ?? {})]);
    base.set('HOSTNAME', podHostname(pod));
    let lastMessage = '';
    while (!stopping.signal.aborted) {
      const refs = envReferences(container);
      const namespace = pod.metadata?.namespace ?? '';
      const secrets = new Map<string, Record<string, string>>();
      const configMaps = new Map<string, Record<string, string>>();
      try {
        for (const name of refs.secrets) {
          const data = await ctx.api.readSecret(namespace, name);
          if (data) secrets.set(name, asText(data));
        }
        for (const name of refs.configMaps) {
          const data = await ctx.api.readConfigMap(namespace, name);
          if (data) configMaps.set(name, asText(data));
        }
      } catch (cause) {
        // An API outage is not a config error: wait and read again, as the kubelet's next sync would.
        ctx.log(`pod ${label}: read env sources: ${(cause as Error).message}`);
        await wait(ctx.retryMs);
        continue;
      }
      const sources: EnvSources = { secrets, configMaps };
      const resolved = resolveEnv(pod, container, sources, base);
      if (resolved.kind === 'resolved') return resolved.env;
      if (resolved.message !== lastMessage)
        event('Warning', 'Failed', `Error: ${resolved.message}`, fieldPathOf(container.name));
      lastMessage = resolved.message;
      await setState(list, index, {
        kind: 'waiting',
        reason: 'CreateContainerConfigError',
        message: resolved.message,
      });
      await wait(ctx.retryMs);
    }
    return undefined;
  };

  const runContainer = async (
    container: V1Container,
    list: ContainerState[],
    index: number,
    hostPaths: Map<string, string>,
  ): Promise<ContainerOutcome> => {
    const image = await pullImage(container, list, index);
    if (!image) return { kind: 'not-started' };
    const env = await resolveContainerEnv(container, image, list, index);
    if (!env || stopping.signal.aborted) return { kind: 'not-started' };
    const containerDir = join(podDir, 'containers', container.name);
    const rootfsPath = join(containerDir, 'rootfs');
    const imageId = ctx.imageId(image);
    const startedAt = ctx.now();
    const containerId = `captf-local://${createHash('sha256').update(`${uid}/${container.name}/${startedAt.toISOString()}`).digest('hex')}`;
    const startError = async (message: string): Promise<ContainerOutcome> => {
      event('Warning', 'Failed', `Error: ${message}`, fieldPathOf(container.name));
      await setState(list, index, {
        kind: 'terminated',
        exitCode: 128,
        reason: 'StartError',
        message,
        finishedAt: ctx.now(),
        containerId,
        imageId,
      });
      return { kind: 'exited', exitCode: 128 };
    };
    let fs: ContainerFilesystem;
    try {
      const imageTopLevel = createRootfs(image, rootfsPath);
      const terminationHostPath = join(containerDir, 'termination-log');
      writeFileSync(terminationHostPath, '');
      fs = {
        rootfsPath,
        imageTopLevel,
        terminationMessage: {
          containerPath: container.terminationMessagePath ?? '/dev/termination-log',
          hostPath: terminationHostPath,
        },
        mounts: (container.volumeMounts ?? []).map((mount) => {
          const volumeDir = hostPaths.get(mount.name) ?? join(podDir, 'volumes', mount.name);
          const hostPath = mount.subPath ? join(volumeDir, mount.subPath) : volumeDir;
          if (mount.subPath && !existsSync(hostPath)) mkdirSync(hostPath, { recursive: true });
          return { mountPath: mount.mountPath, hostPath };
        }),
      };
    } catch (cause) {
      return startError(`create container filesystem: ${(cause as Error).message}`);
    }
    const plan = launchPlan({ container, image: image.config, env, fs });
    mkdirSync(plan.cwd, { recursive: true });
    const command = plan.argv[0];
    if (command === undefined) return startError('no command specified');
    const found = findExecutable(command, plan.env.PATH ?? '', plan.cwd);
    if (found.kind === 'missing') return startError(found.message);
    const home = join(containerDir, 'home');
    mkdirSync(home, { recursive: true });
    const logPath = containerLogPath(ctx.podsDir, uid, container.name);
    event('Normal', 'Created', `Created container ${container.name}`, fieldPathOf(container.name));
    let proc: ContainerProcess;
    try {
      proc = startContainerProcess({
        argv: [found.path, ...plan.argv.slice(1)],
        env: { HOME: home, ...plan.env },
        cwd: plan.cwd,
        logPath,
        hostname: ctx.setHostname ? podHostname(pod) : undefined,
      });
    } catch (cause) {
      return startError((cause as Error).message);
    }
    processes.set(proc, container.name);
    // A termination asked for while the container was being created reaches it like any running one.
    if (killAtMs !== undefined) proc.terminate();
    event('Normal', 'Started', `Started container ${container.name}`, fieldPathOf(container.name));
    ctx.log(`pod ${label}: container ${container.name} started (pid ${proc.pid}, log ${logPath})`);
    await setState(list, index, { kind: 'running', startedAt, containerId, imageId });
    const exit = await proc.exited;
    processes.delete(proc);
    const fileContent = readFileSync(fs.terminationMessage.hostPath);
    const message = terminationMessage({
      fileContent,
      policy: container.terminationMessagePolicy,
      exitCode: exit.exitCode,
      logTail: () => (existsSync(logPath) ? readFileSync(logPath) : Buffer.alloc(0)),
      containerCount,
    });
    const bySignal = exit.signal === undefined ? '' : ` (signal ${exit.signal})`;
    ctx.log(`pod ${label}: container ${container.name} exited ${exit.exitCode}${bySignal}`);
    await setState(list, index, {
      kind: 'terminated',
      exitCode: exit.exitCode,
      reason: exit.exitCode === 0 ? 'Completed' : 'Error',
      ...(message ? { message } : {}),
      startedAt,
      finishedAt: ctx.now(),
      containerId,
      imageId,
    });
    return { kind: 'exited', exitCode: exit.exitCode };
  };

  const run = async (): Promise<void> => {
    mkdirSync(podDir, { recursive: true });
    const deadlineSeconds = spec.activeDeadlineSeconds;
    if (deadlineSeconds !== undefined) {
      const remainingMs = startTime.getTime() + deadlineSeconds * 1000 - ctx.now().getTime();
      deadlineTimer = setTimeout(
        () => requestTermination('deadline', spec.terminationGracePeriodSeconds ?? 30),
        Math.max(0, remainingMs),
      );
    }
    await publish();
    let hostPaths: Map<string, string> | undefined;
    let lastMountMessage = '';
    while (!stopping.signal.aborted) {
      const setup = await setUpVolumes(pod, podDir, ctx.api).catch(
        (cause: Error) => ({ kind: 'waiting', message: cause.message }) as const,
      );
      if (setup.kind === 'ready') {
        hostPaths = setup.hostPaths;
        break;
      }
      // The kubelet aggregates a repeated event into one with a count; here: once per distinct message.
      if (setup.message !== lastMountMessage) event('Warning', 'FailedMount', setup.message);
      lastMountMessage = setup.message;
      for (const [index, state] of runtime.app.entries())
        if (state.kind === 'waiting') runtime.app[index] = { kind: 'waiting', reason: 'ContainerCreating' };
      await publish();
      await wait(ctx.retryMs);
    }
    if (hostPaths) {
      runtime.sandboxReady = true;
      let initialised = true;
      for (const [index, container] of initSpecs.entries()) {
        const outcome = await runContainer(container, runtime.init, index, hostPaths);
        if (outcome.kind !== 'exited' || outcome.exitCode !== 0) {
          initialised = false;
          break;
        }
      }
      if (initialised && !stopping.signal.aborted) {
        const mounts = hostPaths;
        await Promise.all(
          appSpecs.map((container, index) => runContainer(container, runtime.app, index, mounts)),
        );
      }
    }
    finished = true;
    clearTimeout(deadlineTimer);
    clearTimeout(killTimer);
    // Every process of the pod has ended: whatever the containers reached, the phase is now terminal.
    runtime.stopped = true;
    // The terminal status is the one write that must land: the Job controller waits for it.
    for (let attempt = 1; !(await publish()) && attempt < 60; attempt++) await sleep(1000);
    if (pod.metadata?.deletionTimestamp && !silent) await ctx.api.deletePod(pod).catch(() => undefined);
    ctx.log(`pod ${label}: finished`);
  };

  const done = run().catch((cause: Error) =>
    ctx.log(`pod ${label}: worker failed: ${cause.stack ?? cause.message}`),
  );

  const graceOf = (latest: V1Pod): number =>
    latest.metadata?.deletionGracePeriodSeconds ?? latest.spec?.terminationGracePeriodSeconds ?? 30;

  return {
    update: (latest) => {
      pod = latest;
      if (latest.metadata?.deletionTimestamp) requestTermination('deleted', graceOf(latest));
    },
    status: () => podStatus(pod, runtime, ctx.now()),
    abandon,
    shutdown: async () => {
      silent = true;
      stopping.abort();
      for (const proc of processes.keys()) proc.terminate();
      const exits = Promise.all([...processes.keys()].map((proc) => proc.exited));
      await Promise.race([exits, sleep(2000)]);
      killAll();
      await done;
    },
    done,
  };
}

/** `ms` the way Go prints a `time.Duration` in kubelet messages (`512ms`, `1.204s`). */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  return ms < 1000 ? `${ms}ms` : `${Number((ms / 1000).toFixed(3))}s`;
}

function asText(data: Record<string, Buffer>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, value.toString('utf8')]));
}
