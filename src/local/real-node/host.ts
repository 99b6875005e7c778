import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';

/**
 * What a real node creates on the host outside its own directory, named from the stack's directory so two
 * stacks on one machine never share a bridge, a subnet, an nftables table or a cgroup.
 */
export interface HostNames {
  /** Linux bridge of the pod network (at most 15 characters, the kernel's limit). */
  bridge: string;
  /** The pods' /24, `10.<a>.<b>.0/24` with a in 64–127, so it stays clear of 10.0.0.0/24 (the services). */
  subnet: string;
  /** nftables table (family `ip`) holding the node's service rule. */
  nftTable: string;
  /** Cgroup under every v1 hierarchy (or the v2 root) that holds the node's pods (kubelet `cgroupRoot`). */
  cgroup: string;
}

/** The host names of the real node whose state lives in `stackDir` (a pure function of the path). */
export function hostNames(stackDir: string): HostNames {
  const hash = createHash('sha256').update(stackDir).digest();
  const id = hash.subarray(0, 4).toString('hex');
  return {
    bridge: `captf${id.slice(0, 8)}`,
    subnet: `10.${64 + ((hash[4] ?? 0) % 64)}.${hash[5] ?? 0}.0/24`,
    nftTable: `captf_${id}`,
    cgroup: `captf-${id}`,
  };
}

/** Host tools a real node runs, by the Debian package or build step that provides them. */
const HOST_TOOLS: [path: string, provider: string][] = [
  ['/usr/bin/containerd', 'Debian package containerd'],
  ['/usr/bin/containerd-shim-runc-v2', 'Debian package containerd'],
  ['/usr/bin/ctr', 'Debian package containerd'],
  ['/usr/sbin/runc', 'Debian package runc'],
  ['/usr/lib/cni/bridge', 'Debian package containernetworking-plugins'],
  ['/usr/lib/cni/host-local', 'Debian package containernetworking-plugins'],
  ['/usr/lib/cni/loopback', 'Debian package containernetworking-plugins'],
  ['/usr/sbin/nft', 'Debian package nftables'],
  ['/usr/sbin/ip', 'Debian package iproute2'],
];

/**
 * What this machine lacks to run a real node: root, overlayfs, cgroups, a host tool or a built binary (each
 * line says which and how to get it). Empty when nothing is missing. `binaries` are the cache's files.
 */
export function missingForRealNode(binaries: Readonly<Record<string, string>>): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root: containerd, runc and the kubelet run as root');
  if (!/\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8')))
    missing.push('the overlay filesystem (containerd snapshotter overlayfs): modprobe overlay');
  if (!existsSync('/sys/fs/cgroup/memory') && !existsSync('/sys/fs/cgroup/cgroup.controllers'))
    missing.push('cgroups mounted under /sys/fs/cgroup');
  for (const [path, provider] of HOST_TOOLS)
    if (!executable(path)) missing.push(`${path} (${provider}; bash scripts/setup.sh installs it)`);
  for (const [name, path] of Object.entries(binaries))
    if (!executable(path)) missing.push(`${path} (${name}: bash scripts/build-binaries.sh node)`);
  return missing;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The host's first non-loopback IPv4 address: the node's InternalIP, where pods reach the API server. */
export function hostAddress(): string {
  for (const addresses of Object.values(networkInterfaces()))
    for (const address of addresses ?? [])
      if (address.family === 'IPv4' && !address.internal) return address.address;
  throw new Error('real node: the host has no non-loopback IPv4 address for the node and its pods');
}

/**
 * The cgroup directories named `name`: one under the v2 root, or one per v1 hierarchy (the kubelet also
 * mirrors its pods into a hybrid host's `unified` v2 hierarchy).
 */
export function cgroupDirs(name: string): string[] {
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return [join('/sys/fs/cgroup', name)];
  return readdirSync('/sys/fs/cgroup', { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join('/sys/fs/cgroup', entry.name, name));
}

/** Removes a cgroup tree bottom-up (a cgroup goes only once empty). Missing directories are fine. */
export function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true }))
    if (entry.isDirectory()) removeCgroupTree(join(dir, entry.name));
  rmdirSync(dir);
}

/**
 * What the kubelet creates outside its `--root-dir`, deepest first: its device plugin socket, in a directory
 * that is a constant of the kubelet (`/var/lib/kubelet/device-plugins/`, which `--root-dir` does not move).
 * `base` is `/var/lib/kubelet` but in tests.
 */
function kubeletHostPaths(base: string): string[] {
  return [join(base, 'device-plugins', 'kubelet.sock'), join(base, 'device-plugins'), base];
}

/**
 * Which of the kubelet's host paths are missing before it starts: the only ones its node's stop removes
 * ({@link removeKubeletHostPaths}), so a host's own kubelet, or what was there before, is never touched.
 */
export function absentKubeletHostPaths(base = '/var/lib/kubelet'): string[] {
  return kubeletHostPaths(base).filter((path) => !existsSync(path));
}

/**
 * Removes, deepest first, the kubelet's host paths that were missing before it started (`absent`, from
 * {@link absentKubeletHostPaths}): the socket, then each directory when empty (one that holds something
 * else now is not ours alone, and stays). Answers what could not be removed, with the error code.
 */
export function removeKubeletHostPaths(absent: readonly string[]): string[] {
  const left: string[] = [];
  for (const path of absent) {
    try {
      if (path.endsWith('.sock')) rmSync(path, { force: true });
      else rmdirSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTEMPTY') left.push(`${path} (${code})`);
    }
  }
  return left;
}

/** Unmounts every mount point under `dir`, deepest first (netns files, overlay roots, shm). */
export function unmountUnder(dir: string): void {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((point): point is string => point?.startsWith(`${dir}/`) === true)
    .sort((a, b) => b.length - a.length);
  for (const point of points) tryRun('umount', ['-l', point]);
}

/** Runs `command args`; returns whether it succeeded (for removals of what may already be gone). */
export function tryRun(command: string, args: readonly string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
