// `node src/local/cli.ts up`: starts the local control plane and Redis, prints where they are and how to
// reuse them from tests (CAPTF_TEST_STACK), and keeps running until interrupted.
import { startLocalStack } from './stack.ts';

const log = (line: string): void => console.log(`[captf] ${line}`);

async function up(): Promise<void> {
  const started = Date.now();
  const stack = await startLocalStack({ log });
  const { info } = stack;
  log(`stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  log(`  Kubernetes v${info.versions.kubernetes}  API server ${info.apiServerUrl}`);
  log(`  redis       ${info.redisUrl}`);
  log(`  tofu        ${info.tofuPath} (v${info.versions.tofu})`);
  log(`  logs        ${info.workDir}/logs`);
  log(`try:  ${info.kubectlPath} --kubeconfig ${info.kubeconfigPath} get --raw '/readyz?verbose'`);
  log(`reuse it in tests:  CAPTF_TEST_STACK=${info.workDir}/stack.json npm test`);
  log('press Ctrl-C to stop');
  let stopping = false;
  const shutdown = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log('stopping');
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  await new Promise(() => {});
}

const command = process.argv[2] ?? 'up';
if (command !== 'up') {
  console.error(`usage: node src/local/cli.ts up (unknown command: ${command})`);
  process.exit(2);
}
up().catch((cause: Error) => {
  console.error(`[captf] error: ${cause.message}`);
  process.exit(1);
});
