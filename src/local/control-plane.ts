import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { BinaryPaths } from './binaries.ts';
import { CA_EXTENSIONS, issueCertificate } from './certificates.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from './process.ts';

/** The user name of the local control plane's admin (the kubeconfig's token, in `system:masters`). */
export const ADMIN_USER = 'captf-admin';
/** A running local control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler. */
export interface ControlPlane {
  apiServerUrl: string;
  /** Bearer token of the `captf-admin` user in `system:masters`. */
  adminToken: string;
  kubeconfigPath: string;
  /** PEM of the API server's self-signed serving certificate (the CA clients trust). */
  caPath: string;
  /** Certificates for the kubelet API of local nodes (`kubectl logs`); see {@link KubeletTls}. */
  kubeletTls: KubeletTls;
  workDir: string;
  processes: ManagedProcess[];
  /** Stops every process, newest first. */
  stop(): Promise<void>;
}

/**
 * The TLS material between the API server and the kubelets of local nodes, as files. One CA (`caPath`)
 * signs both sides: the API server verifies a node's serving certificate with it
 * (`--kubelet-certificate-authority`), and a node trusts only client certificates it signed
 * (the kubelet's `--client-ca-file`), i.e. the API server's `--kubelet-client-certificate`.
 */
export interface KubeletTls {
  caPath: string;
  /** The CA's key: each node's kubelet gets a serving certificate for its own address from it. */
  caKeyPath: string;
}

export interface ControlPlaneOptions {
  binaries: BinaryPaths;
  /** Directory for etcd data, certificates, the kubeconfig and logs; created if missing. */
  workDir: string;
  /** Progress lines for the person waiting. */
  log?: (line: string) => void;
}

/**
 * GETs `path` on a local HTTPS server; resolves with the status code and body, rejects on transport errors.
 * Without `ca`, the server's self-signed certificate is accepted (component health ports on loopback only).
 */
export function httpsGet(
  baseUrl: string,
  path: string,
  auth: { ca?: string; token?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const options = {
      ...(auth.ca ? { ca: auth.ca } : { rejectUnauthorized: false }),
      headers: auth.token ? { authorization: `Bearer ${auth.token}` } : {},
      timeout: 5000,
    };
    const req = request(new URL(path, baseUrl), options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Starts etcd, kube-apiserver, kube-controller-manager (job, garbage collector, ttl-after-finished,
 * namespace, service accounts, pod GC) and kube-scheduler on loopback, on free ports, with a static admin
 * token and generated service-account keys, and writes a kubeconfig. Waits on health endpoints, never on
 * sleeps. Throws with the failing component's log tail; whatever was started is stopped first.
 */
export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const { binaries, workDir } = options;
  const log = options.log ?? (() => {});
  const pki = join(workDir, 'pki');
  const logs = join(workDir, 'logs');
  mkdirSync(pki, { recursive: true });
  mkdirSync(logs, { recursive: true });

  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const saKey = join(pki, 'sa.key');
  const saPub = join(pki, 'sa.pub');
  writeFileSync(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
  const adminToken = randomBytes(24).toString('hex');
  const tokens = join(pki, 'tokens.csv');
  writeFileSync(tokens, `${adminToken},${ADMIN_USER},${ADMIN_USER},"system:masters"\n`, { mode: 0o600 });

  const [etcdPort, etcdPeerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const apiServerUrl = `https://127.0.0.1:${apiPort}`;
  const processes: ManagedProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const proc of [...processes].reverse()) await proc.stop();
  };

  try {
    log(`starting etcd v${binaries.versions.etcd} on ${etcdUrl}`);
    const etcd = startProcess(
      'etcd',
      binaries.etcd,
      [
        `--data-dir=${join(workDir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      logs,
    );
    processes.push(etcd);
    await waitUntilHealthy(etcd, 'healthy', async () => {
      const res = await fetch(`${etcdUrl}/health`);
      return res.ok && ((await res.json()) as { health?: string }).health === 'true';
    });

    const kubeletTls = makeKubeletCertificates(pki);
    log(`starting kube-apiserver v${binaries.versions.kubernetes} on ${apiServerUrl}`);
    const certDir = join(pki, 'serving');
    const apiserver = startProcess(
      'kube-apiserver',
      binaries.kubeApiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        // 127.0.0.1 as advertise address is only valid with the endpoint reconciler off (kubernetes#121942).
        '--advertise-address=127.0.0.1',
        '--endpoint-reconciler-type=none',
        `--cert-dir=${certDir}`,
        `--token-auth-file=${tokens}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        '--enable-priority-and-fairness=false',
        // `kubectl logs` goes through the API server to the node's kubelet API. Local nodes report
        // InternalIP 127.0.0.1 and a Hostname that resolves nowhere; verify the node's certificate.
        '--kubelet-preferred-address-types=InternalIP,Hostname',
        `--kubelet-certificate-authority=${kubeletTls.caPath}`,
        `--kubelet-client-certificate=${join(pki, 'apiserver-kubelet-client.crt')}`,
        `--kubelet-client-key=${join(pki, 'apiserver-kubelet-client.key')}`,
      ],
      logs,
    );
    processes.push(apiserver);
    const caPath = join(certDir, 'apiserver.crt');
    let ca = '';
    await waitUntilHealthy(
      apiserver,
      'ready',
      async () => {
        ca ||= readFileSync(caPath, 'utf8');
        const res = await httpsGet(apiServerUrl, '/readyz', { ca, token: adminToken });
        return res.status === 200;
      },
      120_000,
    );

    const kubeconfigPath = join(workDir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfig(apiServerUrl, caPath, adminToken), { mode: 0o600 });

    const [kcmPort, schedulerPort] = [await freePort(), await freePort()];
    log(
      'starting kube-controller-manager (job, garbage collector, ttl-after-finished, namespace, service accounts)',
    );
    const controllerManager = startProcess(
      'kube-controller-manager',
      binaries.kubeControllerManager,
      [
        `--kubeconfig=${kubeconfigPath}`,
        `--authentication-kubeconfig=${kubeconfigPath}`,
        `--authorization-kubeconfig=${kubeconfigPath}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
        // root-ca-certificate-publisher makes kube-root-ca.crt, without which no pod with a service-account
        // token volume can start (the runner's kubernetes backend uses that token).
        '--controllers=job,garbagecollector,ttl-after-finished,namespace,serviceaccount,serviceaccount-token,podgc,root-ca-certificate-publisher-controller',
        `--service-account-private-key-file=${saKey}`,
        `--root-ca-file=${caPath}`,
      ],
      logs,
    );
    processes.push(controllerManager);

    log('starting kube-scheduler');
    const scheduler = startProcess(
      'kube-scheduler',
      binaries.kubeScheduler,
      [
        `--kubeconfig=${kubeconfigPath}`,
        `--authentication-kubeconfig=${kubeconfigPath}`,
        `--authorization-kubeconfig=${kubeconfigPath}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${schedulerPort}`,
      ],
      logs,
    );
    processes.push(scheduler);

    await waitUntilHealthy(controllerManager, 'healthy', async () => {
      return (await httpsGet(`https://127.0.0.1:${kcmPort}`, '/healthz')).status === 200;
    });
    await waitUntilHealthy(scheduler, 'healthy', async () => {
      return (await httpsGet(`https://127.0.0.1:${schedulerPort}`, '/healthz')).status === 200;
    });
    // Pods are admitted only once their namespace's service account exists; the service-account controller
    // creating `default/default` shows the controller-manager's controllers are running.
    await waitUntilHealthy(controllerManager, 'running its controllers', async () => {
      const res = await httpsGet(apiServerUrl, '/api/v1/namespaces/default/serviceaccounts/default', {
        ca,
        token: adminToken,
      });
      return res.status === 200;
    });
    log('control plane ready');
    return { apiServerUrl, adminToken, kubeconfigPath, caPath, kubeletTls, workDir, processes, stop };
  } catch (cause) {
    await stop();
    throw cause;
  }
}

/** Common name of the API server's kubelet client certificate; local nodes accept no other client. */
export const KUBELET_CLIENT_CN = 'kube-apiserver-kubelet-client';

/**
 * Writes the kubelet CA and the API server's kubelet client certificate into `pki`
 * (src/local/certificates.ts); each node issues its own serving certificate from the CA.
 */
function makeKubeletCertificates(pki: string): KubeletTls {
  const ca = issueCertificate({
    dir: pki,
    name: 'kubelet-ca',
    subject: '/CN=captf-local-kubelet-ca',
    extensions: CA_EXTENSIONS,
  });
  issueCertificate({
    dir: pki,
    name: 'apiserver-kubelet-client',
    subject: `/O=system:masters/CN=${KUBELET_CLIENT_CN}`,
    extensions: [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=clientAuth',
    ],
    issuer: ca,
  });
  return { caPath: ca.certPath, caKeyPath: ca.keyPath };
}

function kubeconfig(server: string, caPath: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: captf-local
  cluster:
    server: ${server}
    certificate-authority: ${caPath}
users:
- name: captf-admin
  user:
    token: ${token}
contexts:
- name: captf-local
  context:
    cluster: captf-local
    user: captf-admin
current-context: captf-local
`;
}
