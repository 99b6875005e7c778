import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { BUNDLES } from '../functions/bundle.ts';

/**
 * `node images/tree.ts <controller|runner> <dest>`: lays out what an image adds on top of its base, under
 * `dest` as under `/`. Both Dockerfiles run exactly this in their build stage and copy `dest` whole into
 * a distroless glibc base (gcr.io/distroless/cc-debian12), and test/integration/images/ runs it too, so a
 * tree that would make a broken image fails a test without a container engine.
 *
 * controller (images/controller.dockerfile), from `npm run build:bundles`:
 *   /usr/local/bin/node          this very Node (the `node` devDependency), debug sections stripped
 *   /app/controller/server.mjs   the handlers' bundle (the image's CMD)
 *   /app/relay/relay.mjs         the relay's bundle (infra/lambda/relay.yaml runs it)
 *   /app/compile-cache/          V8's compile cache of both bundles (NODE_COMPILE_CACHE): an instance starts
 *                                from compiled code instead of parsing 5 MB of JavaScript
 * runner (images/runner.dockerfile), from `npm run build:runner`:
 *   /runner                      the single executable the Job's init container runs as `runner copy`
 */

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Node's flags in the controller image (its ENTRYPOINT). `--lite-mode` runs V8 without its optimizing
 * compilers: a step waits on the API server and Redis, not on JavaScript, and without optimized code and
 * the compilers' memory an instance stays under 100 MB after 10,000 steps instead of growing past 250 MB
 * (npm run bench -- cold-start). The price is CPU: about 3.9 ms per no-op step against 1.9 ms without it
 * (bench/results/cold-start-2026-12-05.txt); no other flag set tried gave both (a 64 MB old space: 139 MB
 * and 2.6 ms; no optimizing compilers with a 1 MB semi-space: 169 MB and 3.3 ms). Memory is what an
 * instance is sized and billed by, so the image keeps the memory. V8 keys its code cache by flags, so the
 * cache is warmed with the same ones.
 */
export const NODE_FLAGS = ['--lite-mode'] as const;

/** Where the compile cache lives in the controller image; the Dockerfile's NODE_COMPILE_CACHE. */
export const COMPILE_CACHE_DIR = '/app/compile-cache';

/** The controller's bundles in the image: path in the image → built file in the repository. */
export const CONTROLLER_FILES = {
  '/app/controller/server.mjs': BUNDLES.server.outfile,
  '/app/relay/relay.mjs': BUNDLES.relay.outfile,
} as const;

/** The image trees this script lays out. */
export type ImageName = 'controller' | 'runner';

function place(source: string, dest: string, mode: number): void {
  if (!existsSync(source)) throw new Error(`lay out image: ${source} is missing (build it first)`);
  mkdirSync(dirname(dest), { recursive: true });
  copyFileSync(source, dest);
  chmodSync(dest, mode);
}

/**
 * Fills `cacheDir` with V8's compile cache of `bundles`: each is loaded once by `node` with `flags` and an empty
 * environment, so every module is compiled and the configuration check then stops it (exit 1) before it
 * listens or connects anywhere. Node writes the cache as the process exits. Throws when a bundle does not
 * stop at the configuration check or the cache stays empty.
 */
export function warmCompileCache(
  node: string,
  flags: readonly string[],
  bundles: readonly string[],
  cacheDir: string,
): void {
  for (const bundle of bundles) {
    const run = spawnSync(node, [...flags, bundle], {
      env: { NODE_COMPILE_CACHE: cacheDir },
      encoding: 'utf8',
    });
    if (!/read (relay )?config: /.test(run.stderr)) {
      throw new Error(
        `warm compile cache with ${bundle}: expected a configuration error, got:\n${run.stderr}`,
      );
    }
  }
  if (readdirSync(cacheDir).length === 0) throw new Error(`warm compile cache: ${cacheDir} stayed empty`);
}

/** Lays out `image` under `dest`. Throws when an input is missing or a step fails. */
export function layOutImage(image: ImageName, dest: string, root = ROOT): void {
  if (image === 'runner') {
    place(join(root, 'dist/runner/runner'), join(dest, 'runner'), 0o755);
    return;
  }
  const node = join(dest, 'usr/local/bin/node');
  place(process.execPath, node, 0o755);
  // The npm `node` package ships with debug sections; without them the binary is about half the size.
  execFileSync('strip', ['--strip-debug', node], { stdio: 'inherit' });
  for (const [path, built] of Object.entries(CONTROLLER_FILES)) {
    place(join(root, built), join(dest, path), 0o644);
    place(join(root, `${built}.LEGAL.txt`), join(dest, `${path}.LEGAL.txt`), 0o644);
  }
  warmCompileCache(
    node,
    NODE_FLAGS,
    Object.keys(CONTROLLER_FILES).map((path) => join(dest, path)),
    join(dest, COMPILE_CACHE_DIR),
  );
}

if (import.meta.main) {
  const [image, dest] = process.argv.slice(2);
  if ((image !== 'controller' && image !== 'runner') || dest === undefined) {
    process.stderr.write('usage: node images/tree.ts <controller|runner> <dest>\n');
    process.exit(2);
  }
  layOutImage(image, resolve(dest));
  process.stdout.write(`image tree ${image}: ${resolve(dest)}\n`);
}
