import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapiFiles } from './binaries.ts';
import {
  crdWithConversionWebhook,
  readCapiCrds,
  readCapiWebhooks,
  type WebhookEndpoint,
  webhookConfigurationOnLoopback,
} from './capi-manifests.ts';
import { CA_EXTENSIONS, issueCertificate, LOOPBACK_SERVER_EXTENSIONS } from './certificates.ts';
import type { Kubectl } from './kubectl.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from './process.ts';

/**
 * Cluster API's real core manager (`sigs.k8s.io/cluster-api/core`, built by scripts/build-binaries.sh capi)
 * against the local API server, with its CRDs, conversion and admission webhooks installed the way a
 * release install has them (src/local/capi-manifests.ts), served with a certificate made here: no
 * cert-manager. It runs with the admin kubeconfig, so none of the release's RBAC (core/config/rbac) is
 * applied: nothing here tests the manager's own rights.
 */

/** What a running manager tells its users (JSON-safe: the test env hands it to every test file). */
export interface CapiManagerInfo {
  version: string;
  /** `https://127.0.0.1:<port>`: the webhook server (conversion at `/convert`, admission at its paths). */
  webhookUrl: string;
  /** `http://127.0.0.1:<port>`: `/healthz` and `/readyz`. */
  healthUrl: string;
  /** `http://127.0.0.1:<port>/metrics` (`--insecure-diagnostics`: plain HTTP, no authentication). */
  metricsUrl: string;
  /** PEM file of the CA the API server trusts for the webhooks. */
  caPath: string;
  logPath: string;
  pid: number;
}

/** A running manager. */
export interface CapiManager {
  info: CapiManagerInfo;
  process: ManagedProcess;
  /**
   * Removes the webhook configurations (a `failurePolicy: Fail` webhook with no server behind it would
   * refuse every later write of a Cluster API object, finalizer removals included), then stops the
   * manager. The CRDs stay. Resolves once it is gone.
   */
  stop(): Promise<void>;
}

/** Options of {@link startCapiManager}. */
export interface CapiManagerOptions {
  /** The stack's kubeconfig (the manager runs as its admin). */
  kubeconfigPath: string;
  files: CapiFiles;
  version: string;
  kubectl: Kubectl;
  /** Directory for the certificates; created if missing. */
  dir: string;
  /** Directory of `capi-manager.log`. */
  logDir: string;
  log?: (line: string) => void;
}

/**
 * How long the install and the manager's start may take, ms: the manager serves in about 2 s, installing
 * the CRDs took 9 to 20 s on a busy 2-core machine.
 */
const READY_TIMEOUT_MS = 90_000;
/** The manager drains its controllers on SIGTERM; past this it is killed, ms. */
const STOP_GRACE_MS = 10_000;

/**
 * Makes the webhook server's CA and certificate, applies Cluster API's CRDs (with the conversion webhook)
 * and webhook configurations pointed at the manager's port (idempotent: server-side apply, so a second
 * start on the same API server re-points them), starts the manager and waits until it is ready. Throws
 * with the manager's log tail when it does not become ready; it is stopped first.
 */
export async function startCapiManager(options: CapiManagerOptions): Promise<CapiManager> {
  const { kubectl, files } = options;
  const started = Date.now();
  const certDir = join(options.dir, 'serving-certs');
  mkdirSync(certDir, { recursive: true });
  mkdirSync(options.logDir, { recursive: true });
  const ca = issueCertificate({
    dir: options.dir,
    name: 'webhook-ca',
    subject: '/CN=captf-local-capi-webhook-ca',
    extensions: CA_EXTENSIONS,
  });
  // tls.crt and tls.key: the names the manager reads from --webhook-cert-dir (cert-manager's Secret keys).
  issueCertificate({
    dir: certDir,
    name: 'tls',
    subject: '/CN=capi-webhook-service',
    extensions: LOOPBACK_SERVER_EXTENSIONS,
    issuer: ca,
  });

  const [webhookPort, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const endpoint: WebhookEndpoint = {
    baseUrl: `https://127.0.0.1:${webhookPort}`,
    caPem: readFileSync(ca.certPath, 'utf8'),
  };
  options.log?.(`installing Cluster API v${options.version}'s CRDs and webhooks (→ ${endpoint.baseUrl})`);
  const crds = readCapiCrds(files.crdDir).map((crd) => crdWithConversionWebhook(crd, endpoint));
  const webhooks = readCapiWebhooks(files.webhooks).map((configuration) =>
    webhookConfigurationOnLoopback(configuration, endpoint),
  );
  const list = (items: unknown[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
  // Server-side: the CRDs are larger than the last-applied annotation of a client-side apply may be.
  const apply = [
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=captf-local-capi',
    '-f',
    '-',
  ];
  await kubectl.run(apply, list(crds));
  await kubectl.run([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...crds.map((crd) => `crd/${crd.metadata.name}`),
  ]);
  await kubectl.run(apply, list(webhooks));
  const webhookNames = webhooks.map(({ kind, metadata }) => `${kind.toLowerCase()}/${metadata.name}`);

  options.log?.(`starting Cluster API v${options.version} core manager`);
  const proc = startProcess(
    'capi-manager',
    files.manager,
    [
      `--kubeconfig=${options.kubeconfigPath}`,
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${certDir}`,
      `--health-addr=127.0.0.1:${healthPort}`,
      `--diagnostics-address=127.0.0.1:${metricsPort}`,
      '--insecure-diagnostics',
      // One manager per API server: no lease to wait for at start (the default, said for the reader).
      '--leader-elect=false',
    ],
    options.logDir,
    // Only what it reads: a parent's KUBECONFIG or POD_* variables would point it elsewhere.
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' },
  );
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  const removeWebhooks = async (): Promise<void> => {
    await kubectl
      .run(['delete', '--ignore-not-found', '--request-timeout=5s', ...webhookNames])
      .catch(() => undefined);
  };
  const stop = async (): Promise<void> => {
    await removeWebhooks();
    await proc.stop(STOP_GRACE_MS);
  };
  try {
    // readyz includes the webhook server's StartedChecker (core/main.go setupChecks): TLS is served.
    await waitUntilHealthy(
      proc,
      'ready',
      async () => (await fetch(`${healthUrl}/readyz`)).status === 200,
      READY_TIMEOUT_MS,
    );
  } catch (cause) {
    await stop();
    throw cause;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  options.log?.(
    `Cluster API core manager ready in ${seconds} s: webhooks ${endpoint.baseUrl}, health ${healthUrl}`,
  );
  return {
    info: {
      version: options.version,
      webhookUrl: endpoint.baseUrl,
      healthUrl,
      metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      caPath: ca.certPath,
      logPath: proc.logPath,
      pid: proc.pid,
    },
    process: proc,
    stop,
  };
}
