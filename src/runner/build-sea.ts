import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';

/**
 * `npm run build:runner [-- <output path>]`: bundles the runner into one self-contained executable, a Node
 * single-executable application (SEA), so the module image needs no Node and no shell
 * (docs/image-contract.md). Steps, following Node's SEA guide for Node 24 (no `--build-sea` there):
 *   1. esbuild bundles src/runner/main.ts and its dependencies (zod) into one CommonJS script;
 *   2. `node --experimental-sea-config` turns it into a blob, with V8's code cache to start faster;
 *   3. a copy of this very Node binary, stripped of debug sections, gets the blob injected by postject.
 * Default output: dist/runner/runner.
 */

/** The fuse string Node looks for to know it carries a SEA blob (Node's SEA documentation). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const output = resolve(process.argv[2] ?? join(root, 'dist/runner/runner'));
const buildDir = join(root, 'dist/runner/build');

await rm(buildDir, { recursive: true, force: true });
await mkdir(buildDir, { recursive: true });
await mkdir(dirname(output), { recursive: true });

const script = join(buildDir, 'runner.cjs');
await build({
  entryPoints: [join(root, 'src/runner/main.ts')],
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'cjs',
  outfile: script,
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const blob = join(buildDir, 'runner.blob');
const seaConfig = join(buildDir, 'sea-config.json');
await writeFile(
  seaConfig,
  JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }),
);
execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: 'inherit' });

const partial = `${output}.partial`;
await copyFile(process.execPath, partial);
// The npm `node` package ships Node with debug info; stripping it roughly halves the executable.
execFileSync('strip', ['--strip-debug', partial], { stdio: 'inherit' });
const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
execFileSync(process.execPath, [postject, partial, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
await rm(output, { force: true });
await copyFile(partial, output);
await rm(partial);
const size = (await stat(output)).size;
process.stdout.write(`runner: ${output} (${(size / 1024 / 1024).toFixed(1)} MiB)\n`);
