import type { V1Container } from '@kubernetes/client-node';
import { expandReferences } from './container-env.ts';
import { type ContainerFilesystem, hostPathOf, rewriteArgument, rewriteEnvValue } from './container-paths.ts';
import type { ImageConfig } from './image-store.ts';

/**
 * What to exec for one container: the argv, environment and working directory of the host process that
 * stands in for it. Pure: the same pod spec always gives the same plan.
 */

/** The host process to start. */
export interface LaunchPlan {
  /** argv[0] is still a path or a name to look up in the plan's PATH. */
  argv: string[];
  env: Record<string, string>;
  /** Host working directory. */
  cwd: string;
}

/**
 * The command line as the container runtime builds it: the container's `command` replaces the image's
 * entrypoint, and its `args` replace the image's cmd (which is dropped as soon as `command` is set);
 * `$(VAR)` references expand against the container's environment (the kubelet's
 * ExpandContainerCommandAndArgs); then every container path is rewritten to the host (container-paths.ts).
 */
export function launchPlan(input: {
  container: V1Container;
  image: ImageConfig;
  env: readonly [string, string][];
  fs: ContainerFilesystem;
}): LaunchPlan {
  const { container, image, fs } = input;
  const envMap = new Map(input.env);
  const hasCommand = (container.command ?? []).length > 0;
  const hasArgs = (container.args ?? []).length > 0;
  const command = hasCommand ? (container.command ?? []) : (image.entrypoint ?? []);
  const args = hasArgs ? (container.args ?? []) : hasCommand ? [] : (image.cmd ?? []);
  const expand = (values: string[]): string[] => values.map((value) => expandReferences(value, envMap));
  const argv = [...expand(command), ...expand(args)].map((argument) => rewriteArgument(argument, fs));
  const env = Object.fromEntries(input.env.map(([name, value]) => [name, rewriteEnvValue(value, fs)]));
  const workingDir = container.workingDir ?? image.workingDir;
  const cwd = workingDir === undefined || workingDir === '/' ? fs.rootfsPath : hostPathOf(workingDir, fs);
  return { argv, env, cwd };
}
