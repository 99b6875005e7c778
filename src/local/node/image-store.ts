import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/**
 * Local images: a directory `<images dir>/<name>/` is the root filesystem of image `<registry>/<name>`,
 * with an optional `image.json` (its config: entrypoint, cmd, env, working dir, and links to host tools
 * such as the test OpenTofu binary). "Pulling" reads the directory and computes its content digest;
 * "creating a container" copies it, so a container's writes never reach the repository and every
 * container starts from a clean image. See infra/local/images/README.md.
 */

/** `image.json`: the OCI image config fields the kubelet uses, plus links to host tools. */
export const ImageConfigSchema = z.strictObject({
  /** Like OCI `Entrypoint`: used when the container has no `command`. */
  entrypoint: z.array(z.string()).optional(),
  /** Like OCI `Cmd`: used when the container has neither `command` nor `args`. */
  cmd: z.array(z.string()).optional(),
  /** Like OCI `Env`; the pod's env overrides it. */
  env: z.record(z.string(), z.string()).optional(),
  /** Like OCI `WorkingDir`: a container path; default `/`. */
  workingDir: z.string().optional(),
  /**
   * Relative path in the image → name of a host tool the node is configured with (e.g.
   * `"captf/runtime": "tofu"`). The container's copy gets a symlink to the tool there.
   */
  links: z.record(z.string(), z.string()).optional(),
});
export type ImageConfig = z.infer<typeof ImageConfigSchema>;

/** A pulled local image. */
export interface LocalImage {
  name: string;
  /** The repository directory it was read from. */
  dir: string;
  config: ImageConfig;
  /** `sha256:<hex>` over the directory's content and config (stable across machines). */
  digest: string;
  /** Host paths of the linked tools, by image-relative path. */
  links: Record<string, string>;
}

/** Pull outcome; `message` reads like a registry's answer, for `state.waiting.message`. */
export type PullResult = { kind: 'pulled'; image: LocalImage } | { kind: 'failed'; message: string };

const configFile = 'image.json';

function treeDigest(dir: string, config: string): string {
  const hash = createHash('sha256');
  hash.update(`config\0${config}\0`);
  const walk = (relative: string): void => {
    for (const entry of readdirSync(join(dir, relative)).sort()) {
      const path = relative ? `${relative}/${entry}` : entry;
      if (path === configFile) continue;
      const full = join(dir, path);
      const stat = lstatSync(full);
      if (stat.isDirectory()) {
        hash.update(`dir\0${path}\0`);
        walk(path);
      } else if (stat.isSymbolicLink()) hash.update(`link\0${path}\0${readlinkSync(full)}\0`);
      else {
        const executable = (stat.mode & 0o111) !== 0 ? 'x' : '-';
        const content = createHash('sha256').update(readFileSync(full)).digest('hex');
        hash.update(`file\0${path}\0${executable}\0${content}\0`);
      }
    }
  };
  walk('');
  return `sha256:${hash.digest('hex')}`;
}

/**
 * Pulls image `name` from the first of `imageDirs` that has it; `digest`, when the reference pins one,
 * must equal the content digest (a changed directory no longer serves an old digest, like a registry).
 * `tools` maps tool names to host executables for the image's links.
 */
export function pullLocalImage(
  name: string,
  digest: string | undefined,
  imageDirs: readonly string[],
  tools: Readonly<Record<string, string>>,
): PullResult {
  const dir = imageDirs.map((root) => join(root, name)).find((path) => existsSync(path));
  if (dir === undefined || !lstatSync(dir).isDirectory())
    return {
      kind: 'failed',
      message: `manifest unknown: no image directory ${name} in ${imageDirs.join(', ')}`,
    };
  const configPath = join(dir, configFile);
  const configText = existsSync(configPath) ? readFileSync(configPath, 'utf8') : '{}';
  let parsedJson: unknown;
  try {
    parsedJson = JSON.parse(configText);
  } catch (cause) {
    return { kind: 'failed', message: `invalid image config ${configPath}: ${(cause as Error).message}` };
  }
  const parsed = ImageConfigSchema.safeParse(parsedJson);
  if (!parsed.success)
    return {
      kind: 'failed',
      message: `invalid image config ${configPath}: ${z.prettifyError(parsed.error)}`,
    };
  const links: Record<string, string> = {};
  for (const [path, tool] of Object.entries(parsed.data.links ?? {})) {
    const target = tools[tool];
    if (target === undefined)
      return {
        kind: 'failed',
        message: `image ${name} links ${path} to tool ${tool}, which this node lacks`,
      };
    links[path] = target;
  }
  const contentDigest = treeDigest(dir, JSON.stringify(parsed.data));
  if (digest !== undefined && digest !== contentDigest)
    return {
      kind: 'failed',
      message: `manifest unknown: ${name}@${digest} (the directory is ${contentDigest})`,
    };
  return { kind: 'pulled', image: { name, dir, config: parsed.data, digest: contentDigest, links } };
}

/**
 * Copies the image into `rootfsPath` (a fresh container's root filesystem) and creates its tool links.
 * Returns the image's top-level entry names, which decide what container paths live in the image.
 * Throws on filesystem errors (the caller reports them as a start error).
 */
export function createRootfs(image: LocalImage, rootfsPath: string): Set<string> {
  mkdirSync(rootfsPath, { recursive: true });
  cpSync(image.dir, rootfsPath, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (source) => source !== join(image.dir, configFile),
  });
  for (const [path, target] of Object.entries(image.links)) {
    const linkPath = join(rootfsPath, path);
    mkdirSync(dirname(linkPath), { recursive: true });
    symlinkSync(target, linkPath);
  }
  return new Set(readdirSync(rootfsPath));
}
