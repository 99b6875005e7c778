import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { parseDocument } from 'yaml';

/**
 * `npm run build:bundles [-- <name>…]`: esbuild bundles of the shipped entry points, each one ES module
 * file with every dependency inside, so an instance loads one file instead of resolving thousands
 * (DESIGN.md section 1: every cold start is paid by an event waiting in the queue):
 *   server  functions/main.ts    → dist/controller/server.mjs  the Knative / container server
 *   relay   functions/relay.ts   → dist/relay/relay.mjs        the watch relay and local timer
 *   lambda  functions/lambda.ts  → dist/lambda/handler.mjs     the AWS Lambda functions (serverless.yml)
 *   plugin  functions/kubectl-captf.ts → dist/plugin/kubectl-captf  the kubectl plugin (docs/kubectl-plugin.md):
 *           one executable file with a node shebang, which kubectl finds on PATH (package.json `bin`, krew)
 * A bundle is rebuilt only when stale: esbuild's metafile of the last build (dist/meta/<name>.json) lists
 * every input, and one newer than the bundle (or a change of this file) makes it stale.
 */

const ROOT = resolve(import.meta.dirname, '..');

/** The bundles, by name: entry point and output file, relative to the repository root. */
export const BUNDLES = {
  server: { entry: 'functions/main.ts', outfile: 'dist/controller/server.mjs' },
  relay: { entry: 'functions/relay.ts', outfile: 'dist/relay/relay.mjs' },
  lambda: { entry: 'functions/lambda.ts', outfile: 'dist/lambda/handler.mjs' },
  plugin: {
    entry: 'functions/kubectl-captf.ts',
    outfile: 'dist/plugin/kubectl-captf',
    executable: true,
    krew: { manifest: 'infra/krew/captf.yaml', dir: 'dist/krew' },
  },
} as const satisfies Record<string, BundleSpec>;

/** One bundle: its entry and output; an executable gets a shebang, a krew release gets packed. */
interface BundleSpec {
  entry: string;
  outfile: string;
  executable?: boolean;
  /** The krew manifest template (infra/krew/captf.yaml) and where the release goes: {@link packKrewRelease}. */
  krew?: KrewRelease;
}

/** Where a krew release of an executable bundle comes from and goes. */
interface KrewRelease {
  /** The manifest template, relative to the repository root. */
  manifest: string;
  /** The release's directory, relative to the repository root. */
  dir: string;
}
export type BundleName = keyof typeof BUNDLES;
export const BUNDLE_NAMES = Object.keys(BUNDLES) as BundleName[];

/**
 * CommonJS dependencies (ioredis, pino, fastify's) call `require` for Node's built-ins; an ES module has
 * none, so each bundle starts by making one.
 */
const REQUIRE_SHIM =
  "import { createRequire as __captfCreateRequire } from 'node:module';\nconst require = __captfCreateRequire(import.meta.url);";

function metaPath(root: string, name: BundleName): string {
  return join(root, 'dist', 'meta', `${name}.json`);
}

function mtimeMs(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Why bundle `name` needs a build, or undefined when it is current. */
export function bundleBuildReason(name: BundleName, root = ROOT): string | undefined {
  const bundle: BundleSpec = BUNDLES[name];
  const { outfile } = bundle;
  const builtMs = mtimeMs(join(root, outfile));
  if (builtMs === undefined) return `${outfile} is missing`;
  // A krew release is packed from the template, the LICENSE and the package version too.
  const release = bundle.krew === undefined ? [] : [bundle.krew.manifest, 'LICENSE', 'package.json'];
  for (const packed of bundle.krew === undefined ? [] : krewFiles(bundle.outfile, bundle.krew))
    if (mtimeMs(join(root, packed)) === undefined) return `${packed} is missing`;
  let inputs: string[];
  try {
    inputs = Object.keys((JSON.parse(readFileSync(metaPath(root, name), 'utf8')) as Metafile).inputs);
  } catch {
    return `${outfile} has no build record`;
  }
  for (const input of [...inputs, ...release, 'functions/bundle.ts']) {
    const inputMs = mtimeMs(join(root, input));
    if (inputMs === undefined) return `${input} is gone`;
    if (inputMs > builtMs) return `${input} is newer than ${outfile}`;
  }
  return undefined;
}

/**
 * Bundles one entry point (a path relative to `root`) into one ES module file `outfile` with every
 * dependency inside; `minify` squeezes whitespace and syntax only. Returns esbuild's metafile. Throws on a
 * build error. Also used by the fault suite for the local handler entry (test/e2e/fleet.ts).
 */
export async function bundleEntry(
  entry: string,
  outfile: string,
  options: { root?: string; minify?: boolean; executable?: boolean } = {},
): Promise<Metafile> {
  const minify = options.minify ?? false;
  // An executable starts with the shebang (kubectl runs a plugin as a program); the file has no extension,
  // so `.mjs` cannot tell node it is an ES module: `--experimental-default-type` is gone, the shebang's
  // node detects the module syntax itself (Node 22.7+ `--experimental-detect-module`, on by default).
  const banner = options.executable ? `#!/usr/bin/env node\n${REQUIRE_SHIM}` : REQUIRE_SHIM;
  const result = await build({
    absWorkingDir: options.root ?? ROOT,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    banner: { js: banner },
    // Whitespace and syntax only: identifiers stay readable in stack traces and logs.
    ...(minify ? { minifyWhitespace: true, minifySyntax: true, legalComments: 'external' as const } : {}),
    metafile: true,
    logLevel: 'warning',
  });
  return result.metafile;
}

/** Builds one bundle and its build record; returns the bundle's size in bytes. Throws on a build error. */
export async function buildBundle(name: BundleName, root = ROOT): Promise<number> {
  const bundle: BundleSpec = BUNDLES[name];
  const { entry, outfile } = bundle;
  const executable = bundle.executable === true;
  const metafile = await bundleEntry(entry, outfile, { root, minify: true, executable });
  if (executable) chmodSync(join(root, outfile), 0o755);
  if (bundle.krew !== undefined) packKrewRelease(root, outfile, bundle.krew);
  mkdirSync(dirname(metaPath(root, name)), { recursive: true });
  writeFileSync(metaPath(root, name), JSON.stringify(metafile));
  return statSync(join(root, outfile)).size;
}

/** The krew release's archive and manifest, relative to the repository root. */
function krewFiles(outfile: string, release: KrewRelease): string[] {
  return [join(release.dir, `${basename(outfile)}.tar.gz`), join(release.dir, basename(release.manifest))];
}

/**
 * Packs an executable bundle as krew installs it, in `release.dir`: `<name>.tar.gz` holding the executable,
 * the LICENSE and `LEGAL.txt` (the bundled packages' licence comments, which esbuild wrote beside the
 * executable), and the manifest from `release.manifest` with the package version, the archive's sha256 and
 * its address (`CAPTF_PLUGIN_URI`, else the archive's file name, for `kubectl krew install --archive`).
 * The executable's own directory keeps the executable alone: kubectl takes every `kubectl-*` file on PATH
 * for a plugin, and `kubectl plugin list` fails on one that is not executable (an archive, a text file).
 */
export function packKrewRelease(root: string, outfile: string, release: KrewRelease): void {
  const binDir = dirname(join(root, outfile));
  const dir = join(root, release.dir);
  const name = basename(outfile);
  mkdirSync(dir, { recursive: true });
  // What a build before this layout packed beside the executable.
  for (const stale of [`${name}.tar.gz`, 'captf.yaml', 'LICENSE'])
    rmSync(join(binDir, stale), { force: true });
  const legal = `${join(root, outfile)}.LEGAL.txt`;
  if (existsSync(legal)) renameSync(legal, join(dir, 'LEGAL.txt'));
  else writeFileSync(join(dir, 'LEGAL.txt'), 'No bundled package carries a licence comment.\n');
  copyFileSync(join(root, 'LICENSE'), join(dir, 'LICENSE'));
  const archive = join(dir, `${name}.tar.gz`);
  execFileSync('tar', ['-czf', archive, '-C', binDir, name, '-C', dir, 'LICENSE', 'LEGAL.txt']);
  const manifest = parseDocument(readFileSync(join(root, release.manifest), 'utf8'));
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string })
    .version;
  manifest.setIn(['spec', 'version'], `v${version}`);
  manifest.setIn(['spec', 'platforms', 0, 'uri'], process.env.CAPTF_PLUGIN_URI ?? basename(archive));
  manifest.setIn(
    ['spec', 'platforms', 0, 'sha256'],
    createHash('sha256').update(readFileSync(archive)).digest('hex'),
  );
  writeFileSync(join(dir, basename(release.manifest)), manifest.toString());
}

/** Builds the stale bundles among `names`; `log` gets one line per build. Throws on a build error. */
export async function ensureBundlesBuilt(
  names: readonly BundleName[],
  log: (line: string) => void,
  root = ROOT,
): Promise<void> {
  for (const name of names) {
    const reason = bundleBuildReason(name, root);
    if (reason === undefined) continue;
    log(`building the ${name} bundle (${reason})`);
    const bytes = await buildBundle(name, root);
    log(`${BUNDLES[name].outfile}: ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
  }
}

if (import.meta.main) {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !(BUNDLE_NAMES as string[]).includes(name));
  if (unknown.length > 0) throw new Error(`build bundles: unknown bundle ${unknown.join(', ')}`);
  await ensureBundlesBuilt(asked.length > 0 ? (asked as BundleName[]) : BUNDLE_NAMES, (line) =>
    process.stdout.write(`[bundle] ${line}\n`),
  );
}
