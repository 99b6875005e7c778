import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layOutImage } from '../../../images/tree.ts';
import { pauseBinaryPath } from '../../../src/local/binaries.ts';
import {
  type LocalRegistry,
  localImageRecipe,
  pushImage,
  runnerImageRecipe,
  startRegistry,
} from '../../../src/local/real-node/images.ts';
import { realNodeBinaries } from '../../../src/local/real-node/real-node.ts';
import { testStack } from '../../env/index.ts';

// The real node's OCI images against the recipes they stand for: the runner image against
// images/runner.dockerfile (its final stage's USER and ENTRYPOINT, its tree from images/tree.ts, the
// libraries its distroless base gives the runner), and a module image against the image contract
// (docs/image-contract.md: /captf/module/ and an executable /captf/runtime). Built with crane into crane's
// registry, read back from the registry as containerd would pull them.

const repoRoot = join(import.meta.dirname, '..', '..', '..');
let registry: LocalRegistry;
let crane: string;
let workDir: string;

beforeAll(async () => {
  crane = realNodeBinaries(testStack().binDir).crane;
  workDir = mkdtempSync(join(tmpdir(), 'captf-real-images-'));
  registry = await startRegistry(crane, workDir);
});

afterAll(async () => {
  await registry?.process.stop();
  rmSync(workDir, { recursive: true, force: true });
});

/** The final stage's instructions of a Dockerfile: `[keyword, rest of line]`. */
function finalStage(name: string): [string, string][] {
  const lines = readFileSync(join(repoRoot, 'images', `${name}.dockerfile`), 'utf8').split('\n');
  const stage: [string, string][] = [];
  for (const line of lines) {
    const match = /^([A-Z]+)\s+(.*)$/.exec(line.trim());
    if (!match?.[1] || match[2] === undefined) continue;
    if (match[1] === 'FROM') stage.length = 0;
    stage.push([match[1], match[2]]);
  }
  return stage;
}

/** The image's OCI config, as the registry serves it. */
function imageConfig(ref: string): { os: string; architecture: string; config: Record<string, unknown> } {
  return JSON.parse(execFileSync(crane, ['config', ref], { encoding: 'utf8' }));
}

/** The image's flattened filesystem: `path → mode` (octal string, as tar lists it), '/'-rooted paths. */
function imageFiles(ref: string): Map<string, string> {
  const tar = join(workDir, 'export.tar');
  execFileSync(crane, ['export', ref, tar]);
  const listing = execFileSync('tar', ['--list', '--verbose', '--numeric-owner', '--file', tar], {
    encoding: 'utf8',
  });
  const files = new Map<string, string>();
  for (const line of listing.trim().split('\n')) {
    const fields = line.split(/\s+/);
    const path =
      fields
        .at(-1)
        ?.replace(/^\.?\/?/, '/')
        .replace(/\/$/, '') ?? '';
    files.set(path, `${fields[0]} ${fields[1]}`);
  }
  return files;
}

/** Regular files under `dir`, as '/'-rooted paths. */
function treeFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => `/${relative(dir, join(entry.parentPath, entry.name))}`);
}

describe('the real node images agree with their recipes', () => {
  it('the runner image: images/runner.dockerfile USER and ENTRYPOINT, the tree.ts tree and the runner libraries', async () => {
    const recipe = runnerImageRecipe(repoRoot, join(workDir, 'runner'));
    const digest = await pushImage(crane, registry.address, recipe, workDir, ['test']);
    const ref = `${registry.address}/runner@${digest}`;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);

    const stage = finalStage('runner');
    const user = stage.find(([keyword]) => keyword === 'USER')?.[1];
    const entrypoint = JSON.parse(stage.find(([keyword]) => keyword === 'ENTRYPOINT')?.[1] ?? '[]');
    expect(user).toBe('65532:65532');
    const config = imageConfig(ref);
    expect(config).toMatchObject({ os: 'linux', architecture: 'amd64' });
    expect(config.config).toMatchObject({ User: user, Entrypoint: entrypoint });

    const files = imageFiles(ref);
    const tree = join(workDir, 'tree');
    layOutImage('runner', tree, repoRoot);
    for (const path of treeFiles(tree)) expect(files.get(path)).toMatch(/^-rwxr-xr-x 0\/0$/);
    // What the distroless base gives the runner: its loader and every library it is linked against.
    const ldd = execFileSync('ldd', [join(tree, 'runner')], { encoding: 'utf8' });
    const libraries = [...ldd.matchAll(/(\/\S+\.so[.\d]*)/g)].map((match) => match[1]);
    expect(libraries.length).toBeGreaterThan(2);
    for (const library of libraries) expect(files.has(library ?? '')).toBe(true);
    expect(files.get('/tmp')).toMatch(/^drwxrwxrwt 0\/0$/);
    expect(readFileSync(join(workDir, 'runner', 'runner-base', 'etc', 'passwd'), 'utf8')).toContain(
      'nonroot:x:65532:65532:',
    );
  });

  it('a module image: /captf/module/ from its directory and /captf/runtime the pinned OpenTofu', async () => {
    const recipe = localImageRecipe(
      join(repoRoot, 'infra', 'local', 'images', 'sample-machine'),
      'sample-machine',
      { tofu: testStack().tofuPath, pause: pauseBinaryPath() },
      join(workDir, 'module'),
    );
    const digest = await pushImage(crane, registry.address, recipe, workDir, ['test']);
    const files = imageFiles(`${registry.address}/sample-machine@${digest}`);
    expect(files.get('/captf/module/main.tf')).toMatch(/^-rw-r--r-- 0\/0$/);
    expect(files.get('/captf/runtime')).toMatch(/^-rwxr-xr-x 0\/0$/);
    // The provisioner's `sleep` (the image has no shell): the pause program, a copy, executable.
    expect(files.get('/captf/module/sleep')).toMatch(/^-rwxr-xr-x 0\/0$/);
    expect(files.has('/image.json')).toBe(false);
    expect(
      execFileSync('cmp', [
        testStack().tofuPath,
        join(workDir, 'module', 'sample-machine-tree', 'captf', 'runtime'),
      ]).length,
    ).toBe(0);
  });
});
