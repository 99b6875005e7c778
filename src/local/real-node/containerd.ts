import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ManagedProcess, startProcess, waitUntilHealthy } from '../process.ts';
import type { HostNames } from './host.ts';

/** The containerd namespace the CRI plugin keeps the kubelet's pods and images in. */
export const CRI_NAMESPACE = 'k8s.io';

/** A running containerd of one real node. */
export interface Containerd {
  process: ManagedProcess;
  /** `unix://…`: the kubelet's `containerRuntimeEndpoint`. */
  endpoint: string;
  address: string;
  /** Kills every task (pod process) and its shim, then stops containerd. */
  stop(): Promise<void>;
}

export interface ContainerdOptions {
  /** The node's directory: containerd's root, state, sockets and CNI configuration go under it. */
  dir: string;
  logDir: string;
  names: HostNames;
  /** The sandbox (pause) image reference, already in the registry. */
  pauseImage: string;
  /** `host:port` of the local registry that serves `captf.local/*`. */
  registry: string;
}

/**
 * containerd's configuration (version 2) for a node that owns nothing outside `dir` but its bridge.
 * `restrict_oom_score_adj`: root here may lack CAP_SYS_RESOURCE, and runc would then fail to lower the
 * container's OOM score (`can't get final child's PID from pipe: EOF`).
 */
export function containerdConfig(options: ContainerdOptions): string {
  const { dir } = options;
  return `version = 2
root = "${join(dir, 'root')}"
state = "${join(dir, 'state')}"
[grpc]
  address = "${join(dir, 'containerd.sock')}"
[ttrpc]
  address = "${join(dir, 'containerd-ttrpc.sock')}"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${options.pauseImage}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${join(dir, 'runc')}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${join(dir, 'cni', 'net.d')}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${join(dir, 'certs.d')}"
`;
}

/**
 * The pod network: a bridge of its own name with host-local addresses from the node's /24. No IP
 * masquerade: pods reach only the host (the API server), so no iptables rules are left behind.
 */
export function cniConfig(dir: string, names: HostNames): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: names.bridge,
      plugins: [
        {
          type: 'bridge',
          bridge: names.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: names.subnet }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: join(dir, 'cni', 'ipam'),
          },
        },
      ],
    },
    null,
    2,
  );
}

/**
 * The registry host `captf.local` served by the local registry alone (containerd's hosts.toml): `server`
 * replaces the upstream, so a missing image is the local registry's 404, never a lookup of `captf.local`.
 * containerd 1.6 refuses a hosts.toml without a `host` table, so the registry is named twice.
 */
export function registryHosts(registry: string): string {
  return `server = "http://${registry}"

[host."http://${registry}"]
  capabilities = ["pull", "resolve"]
`;
}

/** Starts containerd with its configuration under `options.dir` and waits until it answers `ctr version`. */
export async function startContainerd(options: ContainerdOptions): Promise<Containerd> {
  const { dir } = options;
  mkdirSync(join(dir, 'cni', 'net.d'), { recursive: true });
  writeFileSync(join(dir, 'cni', 'net.d', '10-captf.conflist'), cniConfig(dir, options.names));
  mkdirSync(join(dir, 'certs.d', 'captf.local'), { recursive: true });
  writeFileSync(join(dir, 'certs.d', 'captf.local', 'hosts.toml'), registryHosts(options.registry));
  const configPath = join(dir, 'containerd.toml');
  writeFileSync(configPath, containerdConfig(options));
  const address = join(dir, 'containerd.sock');
  const proc = startProcess('containerd', '/usr/bin/containerd', ['--config', configPath], options.logDir);
  const ctr = (...args: string[]): string =>
    execFileSync('/usr/bin/ctr', ['--address', address, '--namespace', CRI_NAMESPACE, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  await waitUntilHealthy(proc, 'serving', async () => ctr('version').includes('Server:'));
  const stop = async (): Promise<void> => {
    // A shim outlives containerd: kill the pods' processes and let the shims go before containerd does.
    const tasks = (() => {
      try {
        return ctr('tasks', 'list', '--quiet').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    })();
    for (const task of tasks) {
      try {
        ctr('tasks', 'kill', '--signal', 'SIGKILL', task);
      } catch {}
    }
    for (const task of tasks) {
      for (let attempt = 0; attempt < 50; attempt++) {
        try {
          ctr('tasks', 'delete', task);
          break;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    }
    await proc.stop();
  };
  return { process: proc, endpoint: `unix://${address}`, address, stop };
}
