// `node src/local/node/main.ts --kubeconfig <path> --images <dir> [...]`: runs the local node (a kubelet
// for development and end-to-end tests) until interrupted. Never shipped to production.
import { parseArgs } from 'node:util';
import { startLocalNode } from './local-node.ts';

const usage = `usage: node src/local/node/main.ts --kubeconfig <path> --images <dir> [--images <dir> ...]
  [--node-name captf-local-node] [--registry captf.local] [--tool name=/host/path ...]
  [--state-dir <dir>] [--unregister-on-stop] [--dedicated] [--keep-pod-dirs]
  [--tls-cert-file <pem> --tls-private-key-file <pem> --client-ca-file <pem>]  (the kubelet API, for kubectl logs)`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      images: { type: 'string', multiple: true },
      'node-name': { type: 'string' },
      registry: { type: 'string' },
      tool: { type: 'string', multiple: true },
      'state-dir': { type: 'string' },
      'unregister-on-stop': { type: 'boolean' },
      dedicated: { type: 'boolean' },
      'keep-pod-dirs': { type: 'boolean' },
      'tls-cert-file': { type: 'string' },
      'tls-private-key-file': { type: 'string' },
      'client-ca-file': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(usage);
    return;
  }
  const kubeconfigPath = values.kubeconfig ?? process.env.KUBECONFIG;
  if (!kubeconfigPath || !values.images?.length) {
    console.error(usage);
    process.exit(2);
  }
  const certPath = values['tls-cert-file'];
  const keyPath = values['tls-private-key-file'];
  const clientCaPath = values['client-ca-file'];
  const tlsGiven = [certPath, keyPath, clientCaPath].filter((value) => value !== undefined).length;
  if (tlsGiven !== 0 && tlsGiven !== 3) {
    console.error(`--tls-cert-file, --tls-private-key-file and --client-ca-file go together\n${usage}`);
    process.exit(2);
  }
  const tools: Record<string, string> = {};
  for (const entry of values.tool ?? []) {
    const [name, path] = entry.split('=', 2);
    if (!name || !path) {
      console.error(`--tool ${entry}: expected name=/host/path\n${usage}`);
      process.exit(2);
    }
    tools[name] = path;
  }
  const node = await startLocalNode({
    kubeconfigPath,
    imageDirs: values.images,
    tools,
    ...(values['node-name'] ? { nodeName: values['node-name'] } : {}),
    ...(values.registry ? { registry: values.registry } : {}),
    ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
    ...(certPath && keyPath && clientCaPath ? { kubeletTls: { certPath, keyPath, clientCaPath } } : {}),
    unregisterOnStop: values['unregister-on-stop'] ?? false,
    dedicated: values.dedicated ?? false,
    keepPodDirs: values['keep-pod-dirs'] ?? false,
  });
  let stopping = false;
  const shutdown = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await node.stop();
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((cause: Error) => {
  console.error(`[local-node] error: ${cause.message}`);
  process.exit(1);
});
