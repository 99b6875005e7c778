import { createHash } from 'node:crypto';
import { accessSync, constants, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the Go-built binaries live (scripts/build-binaries.sh writes them). */
export interface BinaryPaths {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  tofu: string;
  /** Knative Eventing's ApiServerSource receive adapter (`cmd/apiserver_receive_adapter`). */
  apiServerReceiveAdapter: string;
  /** Knative Eventing's PingSource adapter (`cmd/mtping`). */
  mtping: string;
  /** The PingSource CRD of the same Knative Eventing release (mtping reads PingSource objects). */
  pingSourceCrd: string;
  /** Cluster API's core manager (`sigs.k8s.io/cluster-api/core`), its CRDs and webhook manifests. */
  capi: CapiFiles;
  versions: { kubernetes: string; etcd: string; tofu: string; knativeEventing: string; clusterApi: string };
}

/** What scripts/build-binaries.sh capi caches from the Cluster API module. */
export interface CapiFiles {
  manager: string;
  /** `core/config/crd/bases/` of the module: one CRD per file. */
  crdDir: string;
  /** `core/config/webhook/manifests.yaml`: the Mutating and ValidatingWebhookConfiguration. */
  webhooks: string;
  /** `clusterctl` of the same release (`cmd/clusterctl`; scripts/build-binaries.sh clusterctl). */
  clusterctl: string;
  /** `cmd/clusterctl/config/manifest/clusterctl-api.yaml`: the provider inventory's CRD `clusterctl init` installs. */
  inventoryCrd: string;
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Reads scripts/versions.env (KEY=VALUE lines), the single source of the pinned versions. */
export function readVersions(): Record<string, string> {
  const text = readFileSync(join(repoRoot, 'scripts', 'versions.env'), 'utf8');
  const versions: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(\S+)$/.exec(line.trim());
    if (match?.[1] && match[2]) versions[match[1]] = match[2];
  }
  return versions;
}

/**
 * The static pause program of this checkout (infra/local/pause/pause.go), in
 * `<cacheBin>/pause-<first 12 hex of the source's sha256>/pause`, as scripts/build-binaries.sh node names it.
 * The path only; the file may not be built.
 */
export function pauseBinaryPath(
  cacheBin = join(process.env.CAPTF_CACHE ?? join(homedir(), '.cache', 'captf'), 'bin'),
): string {
  const hash = createHash('sha256')
    .update(readFileSync(join(repoRoot, 'infra', 'local', 'pause', 'pause.go')))
    .digest('hex')
    .slice(0, 12);
  return join(cacheBin, `pause-${hash}`, 'pause');
}

/**
 * Locates the pinned binaries in `$CAPTF_CACHE/bin` (default `~/.cache/captf/bin`).
 * Throws an Error naming the missing file and the command that builds it.
 */
export function locateBinaries(env: NodeJS.ProcessEnv = process.env): BinaryPaths {
  const versions = readVersions();
  const k8s = versions.K8S_VERSION;
  const etcd = versions.ETCD_VERSION;
  const tofu = versions.TOFU_VERSION;
  const knative = versions.KNATIVE_EVENTING_VERSION;
  const capi = versions.CAPI_VERSION;
  if (!k8s || !etcd || !tofu || !knative || !capi)
    throw new Error(
      'read scripts/versions.env: K8S_VERSION, ETCD_VERSION, TOFU_VERSION, KNATIVE_EVENTING_VERSION or CAPI_VERSION missing',
    );
  const bin = join(env.CAPTF_CACHE ?? join(homedir(), '.cache', 'captf'), 'bin');
  const paths: BinaryPaths = {
    etcd: join(bin, `etcd-v${etcd}`, 'etcd'),
    kubeApiserver: join(bin, `k8s-v${k8s}`, 'kube-apiserver'),
    kubeControllerManager: join(bin, `k8s-v${k8s}`, 'kube-controller-manager'),
    kubeScheduler: join(bin, `k8s-v${k8s}`, 'kube-scheduler'),
    kubectl: join(bin, `k8s-v${k8s}`, 'kubectl'),
    tofu: join(bin, `tofu-v${tofu}`, 'tofu'),
    apiServerReceiveAdapter: join(bin, `knative-v${knative}`, 'apiserver_receive_adapter'),
    mtping: join(bin, `knative-v${knative}`, 'mtping'),
    pingSourceCrd: join(bin, `knative-v${knative}`, 'pingsource-crd.yaml'),
    capi: {
      manager: join(bin, `capi-v${capi}`, 'cluster-api-manager'),
      crdDir: join(bin, `capi-v${capi}`, 'crds'),
      webhooks: join(bin, `capi-v${capi}`, 'webhooks.yaml'),
      clusterctl: join(bin, `capi-v${capi}`, 'clusterctl'),
      inventoryCrd: join(bin, `capi-v${capi}`, 'clusterctl-api.yaml'),
    },
    versions: { kubernetes: k8s, etcd, tofu, knativeEventing: knative, clusterApi: capi },
  };
  // Each file with the build-binaries.sh component that makes it, so the error names the shortest fix.
  const required: [path: string, mode: number, component: string][] = [
    [paths.etcd, constants.X_OK, 'etcd'],
    [paths.kubeApiserver, constants.X_OK, 'k8s'],
    [paths.kubeControllerManager, constants.X_OK, 'k8s'],
    [paths.kubeScheduler, constants.X_OK, 'k8s'],
    [paths.kubectl, constants.X_OK, 'k8s'],
    [paths.tofu, constants.X_OK, 'tofu'],
    [paths.apiServerReceiveAdapter, constants.X_OK, 'knative'],
    [paths.mtping, constants.X_OK, 'knative'],
    [paths.pingSourceCrd, constants.R_OK, 'knative'],
    [paths.capi.manager, constants.X_OK, 'capi'],
    [paths.capi.crdDir, constants.R_OK, 'capi'],
    [paths.capi.webhooks, constants.R_OK, 'capi'],
    [paths.capi.clusterctl, constants.X_OK, 'clusterctl'],
    [paths.capi.inventoryCrd, constants.R_OK, 'clusterctl'],
  ];
  for (const [path, mode, component] of required) {
    try {
      accessSync(path, mode);
    } catch {
      throw new Error(
        `locate binaries: ${path} is missing; build it with: bash scripts/build-binaries.sh ${component}`,
      );
    }
  }
  return paths;
}
