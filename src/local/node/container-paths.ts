/**
 * The local node has no mount namespace: a container process sees the host's filesystem. To run a real
 * pod spec unchanged, every container path in the command, args, env values and working directory is
 * rewritten to the host directory that backs it (a volume, the container's copy of its image, or its
 * termination message file). Pure.
 */

/** The filesystem view of one container. */
export interface ContainerFilesystem {
  /** Volume mounts: container `mountPath` to host directory (or file, for `subPath` mounts). */
  mounts: { mountPath: string; hostPath: string }[];
  /** Host directory holding this container's copy of its image (its root filesystem). */
  rootfsPath: string;
  /** Top-level entries of the image (`captf`, `runner`, ...): only paths under them live in the image. */
  imageTopLevel: ReadonlySet<string>;
  /** The container's `terminationMessagePath` and the host file that stands in for it. */
  terminationMessage: { containerPath: string; hostPath: string };
}

const trimTrailingSlash = (path: string): string => (path.length > 1 ? path.replace(/\/+$/, '') : path);

/**
 * Maps one absolute container path to the host. First match wins: the termination message path, the
 * longest volume mount that contains the path (as the kernel resolves stacked mounts), the image when the
 * path's first element is in the image, else the host path unchanged (`/bin/sh`, `/dev/null`, `/tmp`).
 */
export function hostPathOf(containerPath: string, fs: ContainerFilesystem): string {
  if (containerPath === fs.terminationMessage.containerPath) return fs.terminationMessage.hostPath;
  let best: { mountPath: string; hostPath: string } | undefined;
  for (const mount of fs.mounts) {
    const mountPath = trimTrailingSlash(mount.mountPath);
    const inside =
      containerPath === mountPath || containerPath.startsWith(mountPath === '/' ? '/' : `${mountPath}/`);
    if (inside && (best === undefined || mountPath.length > best.mountPath.length))
      best = { mountPath, hostPath: mount.hostPath };
  }
  if (best) return best.hostPath + containerPath.slice(best.mountPath === '/' ? 0 : best.mountPath.length);
  const first = containerPath.split('/')[1] ?? '';
  if (first !== '' && fs.imageTopLevel.has(first)) return fs.rootfsPath + containerPath;
  return containerPath;
}

// `--flag=/path` and `-flag=/path` (Go's flag package accepts both; Terraform uses `-chdir=`).
const flagWithPath = /^(--?[A-Za-z0-9][\w.-]*=)(\/.*)$/;

/**
 * Rewrites one argument (or env value): an absolute path, or the value of a `--flag=/path` argument.
 * Anything else (relative paths, words, `$(VAR)` leftovers) passes unchanged.
 */
export function rewriteArgument(argument: string, fs: ContainerFilesystem): string {
  if (argument.startsWith('/')) return hostPathOf(argument, fs);
  const flag = flagWithPath.exec(argument);
  if (flag?.[1] && flag[2]) return flag[1] + hostPathOf(flag[2], fs);
  return argument;
}

/**
 * Rewrites an env value: like an argument, and a colon-separated list of absolute paths (`PATH`-like)
 * element by element.
 */
export function rewriteEnvValue(value: string, fs: ContainerFilesystem): string {
  const parts = value.split(':');
  if (parts.length > 1 && parts.every((part) => part.startsWith('/')))
    return parts.map((part) => hostPathOf(part, fs)).join(':');
  return rewriteArgument(value, fs);
}
