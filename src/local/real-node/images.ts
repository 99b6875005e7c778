import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { layOutImage } from '../../../images/tree.ts';
import { freePort } from '../ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from '../process.ts';

/**
 * The real node's images: OCI images assembled with crane and pushed to crane's own registry on loopback.
 * containerd pulls `captf.local/<name>:<tag>` from it (a registry mirror in its configuration), so image
 * references, digests and pull failures are a registry's own.
 */

/** The registry host of the local images; containerd's mirror sends it to the local registry. */
export const LOCAL_REGISTRY_HOST = 'captf.local';
/** Tags every local image is pushed under (the runner as `:dev`, the samples and fixtures as `:1`). */
export const LOCAL_IMAGE_TAGS = ['1', 'dev'] as const;
/** The sandbox image; the node's own static pause program (scripts/build-binaries.sh pause). */
export const PAUSE_IMAGE = `${LOCAL_REGISTRY_HOST}/pause:1`;
/** The user of the runner image (images/runner.dockerfile `USER`) and of every Job pod. */
export const NONROOT_USER = '65532:65532';

/** A running local registry (`crane registry serve`, in memory). */
export interface LocalRegistry {
  process: ManagedProcess;
  /** `127.0.0.1:<port>`. */
  address: string;
}

/** Starts crane's registry on a free loopback port and waits until `/v2/` answers. */
export async function startRegistry(crane: string, logDir: string): Promise<LocalRegistry> {
  const address = `127.0.0.1:${await freePort()}`;
  const proc = startProcess('registry', crane, ['registry', 'serve', '--address', address], logDir);
  await waitUntilHealthy(proc, 'serving', async () => (await fetch(`http://${address}/v2/`)).ok);
  return { process: proc, address };
}

/**
 * Adds to `root` what images/runner.dockerfile's base (gcr.io/distroless/cc-debian12, which cannot be
 * pulled here) gives the runner: the loader and libraries `ldd` names for `binary` (this host is Debian 12
 * too), /tmp, and /etc/passwd and /etc/group with `nonroot` (65532).
 */
export function layOutDistrolessStandIn(root: string, binary: string): void {
  const ldd = execFileSync('ldd', [binary], { encoding: 'utf8' });
  for (const match of ldd.matchAll(/(\/\S+\.so[.\d]*)/g)) {
    const library = match[1] ?? '';
    mkdirSync(join(root, dirname(library)), { recursive: true });
    copyFileSync(library, join(root, library));
  }
  mkdirSync(join(root, 'tmp'), { recursive: true });
  chmodSync(join(root, 'tmp'), 0o1777);
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(
    join(root, 'etc/passwd'),
    'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n',
  );
  writeFileSync(join(root, 'etc/group'), 'root:x:0:\nnonroot:x:65532:\n');
}

/** An image to push: its layers (directories, lowest first) and the OCI config fields it sets. */
export interface ImageRecipe {
  name: string;
  layers: readonly string[];
  entrypoint?: readonly string[];
  cmd?: readonly string[];
  env?: Readonly<Record<string, string>>;
  workingDir?: string;
  user?: string;
}

const execFileAsync = promisify(execFile);

/**
 * Pushes `recipe` to `registry` as `<name>:<tag>` for each of `tags`, each layer a tar of its directory
 * with owner root and a fixed mtime (so the digest depends on content only). Resolves with the manifest
 * digest; rejects with crane's stderr on failure. Asynchronous: the registry is this process's child, and
 * its log pipe must keep draining while crane talks to it.
 */
export async function pushImage(
  crane: string,
  registry: string,
  recipe: ImageRecipe,
  workDir: string,
  tags: readonly string[] = LOCAL_IMAGE_TAGS,
): Promise<string> {
  const [firstTag, ...moreTags] = tags;
  if (firstTag === undefined) throw new Error(`push image ${recipe.name}: no tag`);
  const ref = `${registry}/${recipe.name}:${firstTag}`;
  const tars = recipe.layers.map((dir, index) => {
    const tar = join(workDir, `${recipe.name}-layer-${index}.tar`);
    chmodSync(dir, 0o755);
    execFileSync('tar', [
      '--create',
      '--file',
      tar,
      '--directory',
      dir,
      '--sort=name',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '.',
    ]);
    return tar;
  });
  const run = async (args: string[]): Promise<string> =>
    (await execFileAsync(crane, args, { encoding: 'utf8' })).stdout.trim();
  await run(['append', '--oci-empty-base', '--new_tag', ref, ...tars.flatMap((tar) => ['--new_layer', tar])]);
  // An empty base has no platform; containerd matches an image's platform against the node's.
  const mutate = [
    '--set-platform',
    'linux/amd64',
    ...(recipe.entrypoint ? ['--entrypoint', recipe.entrypoint.join(',')] : []),
    ...(recipe.cmd ? ['--cmd', recipe.cmd.join(',')] : []),
    ...Object.entries(recipe.env ?? {}).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
    ...(recipe.workingDir ? ['--workdir', recipe.workingDir] : []),
    ...(recipe.user ? ['--user', recipe.user] : []),
  ];
  await run(['mutate', ref, ...mutate, '--tag', ref]);
  for (const tag of moreTags) await run(['tag', ref, tag]);
  return run(['digest', ref]);
}

/** `image.json` of a local image directory (infra/local/images/README.md). */
interface LocalImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  env?: Record<string, string>;
  workingDir?: string;
  links?: Record<string, string>;
}

/**
 * The recipe of a local image directory (infra/local/images/README.md): one layer with the directory's
 * files and, where `image.json` links a path to a host tool, a copy of that tool (the module images'
 * `/captf/runtime`). Throws when it links a tool not in `tools`.
 */
export function localImageRecipe(
  dir: string,
  name: string,
  tools: Readonly<Record<string, string>>,
  workDir: string,
): ImageRecipe {
  const configPath = join(dir, 'image.json');
  const config = existsSync(configPath)
    ? (JSON.parse(readFileSync(configPath, 'utf8')) as LocalImageConfig)
    : {};
  const layer = join(workDir, `${name}-tree`);
  cpSync(dir, layer, { recursive: true, filter: (source) => source !== configPath });
  for (const [path, tool] of Object.entries(config.links ?? {})) {
    const source = tools[tool];
    if (source === undefined)
      throw new Error(`image ${name} links ${path} to tool ${tool}, which is not built`);
    mkdirSync(dirname(join(layer, path)), { recursive: true });
    copyFileSync(source, join(layer, path));
    chmodSync(join(layer, path), 0o755);
  }
  return {
    name,
    layers: [layer],
    ...(config.entrypoint ? { entrypoint: config.entrypoint } : {}),
    ...(config.cmd ? { cmd: config.cmd } : {}),
    ...(config.env ? { env: config.env } : {}),
    ...(config.workingDir ? { workingDir: config.workingDir } : {}),
  };
}

/**
 * The runner image as images/runner.dockerfile builds it: images/tree.ts's runner tree on the distroless
 * stand-in, `USER 65532:65532`, `ENTRYPOINT ["/runner"]`. `root` is the repository (its dist/runner/runner).
 */
export function runnerImageRecipe(root: string, workDir: string): ImageRecipe {
  const base = join(workDir, 'runner-base');
  const tree = join(workDir, 'runner-tree');
  layOutImage('runner', tree, root);
  layOutDistrolessStandIn(base, join(tree, 'runner'));
  return { name: 'runner', layers: [base, tree], entrypoint: ['/runner'], user: NONROOT_USER };
}

/** The pause image: the static pause program alone, as its entrypoint. */
export function pauseImageRecipe(pause: string, workDir: string): ImageRecipe {
  const tree = join(workDir, 'pause-tree');
  mkdirSync(tree, { recursive: true });
  copyFileSync(pause, join(tree, 'pause'));
  chmodSync(join(tree, 'pause'), 0o755);
  return { name: 'pause', layers: [tree], entrypoint: ['/pause'], user: NONROOT_USER };
}

/**
 * Pushes the node's images to `registry`: pause, the runner (from the repository's build), and every
 * directory of `imageDirs` but `runner` (the local images, test fixtures). The first directory holding a
 * name wins. Returns digest by image name.
 */
export async function pushLocalImages(options: {
  crane: string;
  registry: string;
  pause: string;
  repoRoot: string;
  imageDirs: readonly string[];
  tools: Readonly<Record<string, string>>;
  workDir: string;
}): Promise<Record<string, string>> {
  const { crane, registry, workDir } = options;
  mkdirSync(workDir, { recursive: true });
  const recipes = [pauseImageRecipe(options.pause, workDir), runnerImageRecipe(options.repoRoot, workDir)];
  const names = new Set(recipes.map((recipe) => recipe.name));
  for (const imageDir of options.imageDirs)
    for (const entry of readdirSync(imageDir, { withFileTypes: true })) {
      if (!entry.isDirectory() || names.has(entry.name)) continue;
      names.add(entry.name);
      recipes.push(localImageRecipe(join(imageDir, entry.name), entry.name, options.tools, workDir));
    }
  const digests: Record<string, string> = {};
  for (const recipe of recipes) digests[recipe.name] = await pushImage(crane, registry, recipe, workDir);
  return digests;
}
