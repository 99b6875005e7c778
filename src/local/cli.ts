// `node src/local/cli.ts up` (the README's `npm start`): the local default of DESIGN.md section 15 in one
// process tree. Starts the control plane and Redis, then the controller of the local run (CRDs, runner,
// local node, handlers, relay and timer: src/local/local-controller.ts), applies the sample (a
// TerraformCluster and two TerraformMachines, infra/samples/local/demo.yaml), shows the run live and,
// on Ctrl-C, stops everything it started. `up --no-sample` starts everything but the sample.
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLiveView } from './live-view.ts';
import { type LocalController, startLocalController } from './local-controller.ts';
import { type LocalStack, startLocalStack } from './stack.ts';
import { nextCommands } from './try-next.ts';
import { grantPlanApprovers, prepareWorkloadNamespace } from './workload-namespace.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SAMPLE_FILE = join(repoRoot, 'infra', 'samples', 'local', 'demo.yaml');
const SAMPLE_NAMESPACE = 'team-a';

const log = (line: string): void => console.log(`[captf] ${line}`);

async function up(withSample: boolean): Promise<void> {
  const started = Date.now();
  let stack: LocalStack | undefined;
  let controller: LocalController | undefined;
  const view = new AbortController();
  let stopping = false;
  const shutdown = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    view.abort();
    log('stopping: relay, handlers, node, then the control plane and Redis');
    await controller?.stop();
    await stack?.stop();
    // The work dir holds etcd data, every pod's files and the local credentials: gone unless asked for.
    if (stack && !process.env.CAPTF_KEEP_STACK) {
      rmSync(stack.info.workDir, { recursive: true, force: true });
      log(`stopped; removed ${stack.info.workDir} (CAPTF_KEEP_STACK=1 keeps it for the logs)`);
    } else {
      log(`stopped${stack ? `; kept ${stack.info.workDir}` : ''}`);
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    stack = await startLocalStack({ log });
    const { info } = stack;
    log(`control plane and Redis ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    controller = await startLocalController({ stack: info, workDir: info.workDir, log });
    log(`controller ready in ${((Date.now() - started) / 1000).toFixed(1)} s: handlers ${controller.url}`);
    log(`  Kubernetes v${info.versions.kubernetes}  API server ${info.apiServerUrl}`);
    log(`  redis ${info.redisUrl}   tofu v${info.versions.tofu}`);
    log(`  logs ${controller.logDir}/{controller,relay,local-node}.log and the control plane's`);
    if (!withSample) {
      log('no sample applied (--no-sample); press Ctrl-C to stop');
      await new Promise(() => undefined);
    }
    await prepareWorkloadNamespace(controller.kubectl, repoRoot, SAMPLE_NAMESPACE, info);
    await grantPlanApprovers(controller.kubectl, SAMPLE_NAMESPACE);
    await controller.kubectl.run(['apply', '-f', SAMPLE_FILE]);
    log(`applied ${SAMPLE_FILE}`);
    for (const line of nextCommands({
      kubectlPath: info.kubectlPath,
      kubeconfigPath: info.kubeconfigPath,
      namespace: SAMPLE_NAMESPACE,
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
          : [`the sample reached Ready ${readyAfter} s after start; Ctrl-C stops everything`];
      },
    });
  } catch (error) {
    console.error(`[captf] error: ${(error as Error).message}`);
    await shutdown(1);
  }
}

const [command = 'up', ...flags] = process.argv.slice(2);
if (command !== 'up' || flags.some((flag) => flag !== '--no-sample')) {
  console.error(`usage: node src/local/cli.ts up [--no-sample] (got: ${process.argv.slice(2).join(' ')})`);
  process.exit(2);
}
void up(!flags.includes('--no-sample'));
