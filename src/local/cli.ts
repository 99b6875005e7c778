// `node src/local/cli.ts up` (the README's `npm start`): the local default of DESIGN.md section 15 in one
// process tree. Starts the control plane and Redis, then the controller of the local run (CRDs, runner,
// local node, handlers, relay and timer: src/local/local-controller.ts), applies the sample (a
// TerraformCluster and two TerraformMachines, infra/samples/local/demo.yaml), shows the run live and,
// on Ctrl-C, stops everything it started. Cluster API's core manager runs beside the controller
// (src/local/capi-manager.ts), as on a management cluster. `up --no-sample` starts everything but the sample;
// `--events=knative` replaces the relay and timer with Knative's own adapters (a receive adapter per
// ApiServerSource, our objects' and the Secrets', and mtping for the PingSource); `--redis=cluster` (or
// `sentinel`) runs the controller on a Redis Cluster (or under Sentinel).
// Job pods run on a real node (kubelet, containerd, runc: src/local/real-node/; needs root).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLES, ensureBundlesBuilt } from '../../functions/bundle.ts';
import { type CapiManager, startCapiManager } from './capi-manager.ts';
import { kubectlFor } from './kubectl.ts';
import { runLiveView } from './live-view.ts';
import {
  LOCAL_EVENT_PATHS,
  type LocalController,
  type LocalEventPath,
  startLocalController,
} from './local-controller.ts';
import { onUnexpectedExit } from './process.ts';
import {
  LOCAL_REDIS_TOPOLOGIES,
  type LocalRedisTopology,
  type LocalStack,
  startLocalStack,
  writeStackInfo,
} from './stack.ts';
import { nextCommands } from './try-next.ts';
import { grantPlanApprovers, prepareWorkloadNamespace } from './workload-namespace.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SAMPLE_FILE = join(repoRoot, 'infra', 'samples', 'local', 'demo.yaml');
/** The Cluster API sample beside it: a Cluster and a MachineDeployment the real Cluster API drives. */
const CAPI_SAMPLE_FILE = join(repoRoot, 'infra', 'samples', 'local', 'capi-demo.yaml');
const SAMPLE_NAMESPACE = 'team-a';

const log = (line: string): void => console.log(`[captf] ${line}`);

/** What `up` was asked for. */
interface UpOptions {
  withSample: boolean;
  events: LocalEventPath;
  redis: LocalRedisTopology;
}

async function up(options: UpOptions): Promise<void> {
  const { withSample } = options;
  const started = Date.now();
  let stack: LocalStack | undefined;
  let controller: LocalController | undefined;
  let capi: CapiManager | undefined;
  const view = new AbortController();
  let stopping = false;
  const shutdown = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    view.abort();
    log('stopping: Cluster API, the event path, handlers, node, then the control plane and Redis');
    // Each phase says how long it took, so a slow stop names its part.
    const phase = async (what: string, stop: (() => Promise<void>) | undefined): Promise<void> => {
      if (stop === undefined) return;
      const from = Date.now();
      await stop();
      log(`stopped ${what} in ${((Date.now() - from) / 1000).toFixed(1)} s`);
    };
    // First, while the API server is up: its stop removes the webhook configurations.
    await phase('Cluster API', capi?.stop);
    await phase('the controller (event path, handlers, node)', controller?.stop);
    // The stack's stop removes its work dir (etcd data, every pod's files, the local credentials) unless asked.
    await phase('the control plane and Redis', stack?.stop);
    if (stack && !process.env.CAPTF_KEEP_STACK)
      log(`stopped; removed ${stack.info.workDir} (CAPTF_KEEP_STACK=1 keeps it for the logs)`);
    else log(`stopped${stack ? `; kept ${stack.info.workDir}` : ''}`);
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    stack = await startLocalStack({ log, redis: options.redis });
    const { info } = stack;
    log(`control plane and Redis ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // The controller and Cluster API's manager need nothing from each other: started side by side; each is
    // recorded as soon as it runs, so the shutdown stops it when the other fails.
    const [controllerStart, capiStart] = await Promise.allSettled([
      startLocalController({
        stack: info,
        workDir: info.workDir,
        events: options.events,
        log,
      }).then((c) => {
        controller = c;
        log(`controller ready in ${((Date.now() - started) / 1000).toFixed(1)} s: handlers ${c.url}`);
        return c;
      }),
      startCapiManager({
        kubeconfigPath: info.kubeconfigPath,
        files: info.capiFiles,
        version: info.versions.clusterApi,
        kubectl: kubectlFor(info.kubectlPath, info.kubeconfigPath),
        dir: join(info.workDir, 'capi'),
        logDir: join(info.workDir, 'logs'),
        log,
      }).then((manager) => (capi = manager)),
    ]);
    if (controllerStart.status === 'rejected') throw controllerStart.reason;
    if (capiStart.status === 'rejected') throw capiStart.reason;
    controller = controllerStart.value;
    capi = capiStart.value;
    // From here on, nothing restarts a part that dies (a local run is for seeing what happens): it is said
    // at once, with its log, and the run goes on without it until Ctrl-C. A part that dies while starting
    // fails the start instead, with its log.
    onUnexpectedExit((exit) => {
      if (stopping) return;
      const how = exit.signal ?? `exit code ${exit.code}`;
      log(`${exit.name} (pid ${exit.pid}) exited unexpectedly (${how}); the local run goes on without it`);
      log(`  its log ${exit.logPath} ends:\n${exit.tail}`);
    });
    // CAPTF_TEST_STACK=<stack.json> test runs use this manager instead of starting a second one.
    info.capi = capi.info;
    writeStackInfo(info);
    log(`  Kubernetes v${info.versions.kubernetes}  API server ${info.apiServerUrl}`);
    log(`  redis ${describeRedis(info.redis)}   tofu v${info.versions.tofu}`);
    log(
      options.events === 'knative'
        ? `  events: Knative Eventing v${info.versions.knativeEventing} ApiServerSource (objects, Secrets) and PingSource adapters`
        : '  events: the bundled relay and its timer',
    );
    const eventLogs =
      options.events === 'knative' ? 'apiserver-source,apiserver-source-secrets,mtping' : 'relay';
    log(
      `  Cluster API v${info.versions.clusterApi} core manager: kubectl get clusters,machinedeployments,machines -A`,
    );
    log(
      `  logs ${controller.logDir}/{controller,${eventLogs},kubelet,containerd,registry,capi-manager}.log and the control plane's`,
    );
    if (!withSample) {
      log('no sample applied (--no-sample); press Ctrl-C to stop');
      await new Promise(() => undefined);
    }
    await prepareWorkloadNamespace(controller.kubectl, SAMPLE_NAMESPACE, info);
    await grantPlanApprovers(controller.kubectl, SAMPLE_NAMESPACE);
    await controller.kubectl.run(['apply', '-f', SAMPLE_FILE]);
    log(`applied ${SAMPLE_FILE}`);
    await controller.kubectl.run(['apply', '-f', CAPI_SAMPLE_FILE]);
    log(
      `applied ${CAPI_SAMPLE_FILE} (kubectl get clusters,machinedeployments,machines -n ${SAMPLE_NAMESPACE})`,
    );
    // The kubectl plugin the commands below use, built as it ships (functions/bundle.ts).
    await ensureBundlesBuilt(['plugin'], log);
    for (const line of nextCommands({
      kubectlPath: info.kubectlPath,
      kubeconfigPath: info.kubeconfigPath,
      namespace: SAMPLE_NAMESPACE,
      pluginDir: dirname(join(repoRoot, BUNDLES.plugin.outfile)),
      nodeDir: dirname(process.execPath),
      handlersUrl: controller.url,
    }))
      console.log(line);
    let readyAfter: string | undefined;
    await runLiveView({
      kubectl: controller.kubectl,
      namespace: SAMPLE_NAMESPACE,
      out: process.stdout,
      signal: view.signal,
      footer: (objects) => {
        const allReady =
          objects.length > 0 &&
          objects.every((o) => o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
        readyAfter ??= allReady ? ((Date.now() - started) / 1000).toFixed(1) : undefined;
        return readyAfter === undefined
          ? ['(waiting for the sample to become Ready; Ctrl-C stops everything)']
          : [
              `the sample reached Ready ${readyAfter} s after the local run started (npm ci before it not counted); Ctrl-C stops everything`,
            ];
      },
    });
  } catch (error) {
    console.error(`[captf] error: ${(error as Error).message}`);
    await shutdown(1);
  }
}

/** One line naming where Redis is. */
function describeRedis(topology: LocalStack['info']['redis']): string {
  switch (topology.kind) {
    case 'single':
      return topology.url;
    case 'cluster':
      return `Cluster ${topology.nodes.map((node) => `${node.host}:${node.port}`).join(',')}`;
    case 'sentinel':
      return `Sentinel ${topology.masterName} via ${topology.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`;
  }
}

/** Reads `up`'s flags; undefined (after printing the usage) when one is unknown. */
function parseUp(args: string[]): UpOptions | undefined {
  const options: UpOptions = { withSample: true, events: 'relay', redis: 'single' };
  for (const arg of args) {
    const [flag, value] = arg.split('=', 2);
    if (arg === '--no-sample') options.withSample = false;
    else if (flag === '--events' && LOCAL_EVENT_PATHS.some((path) => path === value))
      options.events = value as LocalEventPath;
    else if (flag === '--redis' && LOCAL_REDIS_TOPOLOGIES.some((topology) => topology === value))
      options.redis = value as LocalRedisTopology;
    else return undefined;
  }
  return options;
}

const [command = 'up', ...flags] = process.argv.slice(2);
const upOptions = command === 'up' ? parseUp(flags) : undefined;
if (upOptions === undefined) {
  console.error(
    `usage: node src/local/cli.ts up [--no-sample] [--events=${LOCAL_EVENT_PATHS.join('|')}] [--redis=${LOCAL_REDIS_TOPOLOGIES.join('|')}] (got: ${process.argv.slice(2).join(' ')})`,
  );
  process.exit(2);
}
void up(upOptions);
