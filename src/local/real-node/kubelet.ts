import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CertificateFiles, issueCertificate } from '../certificates.ts';
import { type ManagedProcess, startProcess } from '../process.ts';
import type { HostNames } from './host.ts';

/**
 * Label of every Node the local run's kubelets register (`captf.io/local-node=true`): a test of the shared
 * stack tells them from any other Node.
 */
export const LOCAL_NODE_LABEL = 'captf.io/local-node';

/** Where and as what one real node's kubelet runs. */
export interface KubeletOptions {
  kubelet: string;
  /** The node's directory: the kubelet's root, pod logs and certificates go under it. */
  dir: string;
  logDir: string;
  names: HostNames;
  nodeName: string;
  /** The node's InternalIP: the kubelet serves its API there (`kubectl logs`, `exec`). */
  nodeIp: string;
  /** The kubelet API port (10250 on a cluster; free ports here, so two nodes share a host). */
  port: number;
  healthzPort: number;
  /** The kubeconfig the kubelet talks to the API server with. */
  kubeconfigPath: string;
  /** The CA of the API server's kubelet client certificate; it signs the node's serving certificate too. */
  kubeletCa: CertificateFiles;
  /** `unix://…` of the node's containerd. */
  runtimeEndpoint: string;
  /** Taints registered with the Node (a test's dedicated node). */
  taints?: readonly { key: string; value: string; effect: string }[];
}

/**
 * The kubelet's configuration. cgroupfs under the node's own cgroup; `failCgroupV1: false` because since
 * 1.35 the kubelet refuses cgroup v1 hosts by default; no cluster DNS (pods use the host's resolv.conf);
 * eviction and image GC thresholds out of the way of a shared development machine.
 */
export function kubeletConfig(options: KubeletOptions, serving: CertificateFiles): string {
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: options.nodeIp,
    port: options.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: options.healthzPort,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: options.kubeletCa.certPath },
    },
    authorization: { mode: 'Webhook' },
    tlsCertFile: serving.certPath,
    tlsPrivateKeyFile: serving.keyPath,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: `/${options.names.cgroup}`,
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: options.runtimeEndpoint,
    podLogsDir: join(options.dir, 'pod-logs'),
    volumePluginDir: join(options.dir, 'volume-plugins'),
    clusterDNS: [],
    enforceNodeAllocatable: [],
    evictionHard: {
      'memory.available': '1Mi',
      'nodefs.available': '1%',
      'nodefs.inodesFree': '1%',
      'imagefs.available': '1%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    resolvConf: '/etc/resolv.conf',
    registerWithTaints: options.taints ?? [],
    // Status updates as a cluster's defaults would give them, so `kubectl describe node` reads the same.
    nodeStatusReportFrequency: '1m',
  };
  return JSON.stringify(config, null, 2);
}

/** Issues the node's serving certificate (its InternalIP) and starts the kubelet; the caller waits for Ready. */
export function startKubelet(options: KubeletOptions): ManagedProcess {
  const pki = join(options.dir, 'pki');
  mkdirSync(pki, { recursive: true });
  const serving = issueCertificate({
    dir: pki,
    name: 'kubelet-serving',
    subject: `/CN=${options.nodeName}`,
    extensions: [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=IP:${options.nodeIp},IP:127.0.0.1,DNS:${options.nodeName}`,
    ],
    issuer: options.kubeletCa,
  });
  const configPath = join(options.dir, 'kubelet.json');
  writeFileSync(configPath, kubeletConfig(options, serving));
  return startProcess(
    'kubelet',
    options.kubelet,
    [
      `--config=${configPath}`,
      `--kubeconfig=${options.kubeconfigPath}`,
      `--root-dir=${join(options.dir, 'kubelet')}`,
      `--cert-dir=${pki}`,
      `--hostname-override=${options.nodeName}`,
      `--node-ip=${options.nodeIp}`,
      `--node-labels=${LOCAL_NODE_LABEL}=true`,
      '--v=1',
    ],
    options.logDir,
  );
}
