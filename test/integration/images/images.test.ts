import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPILE_CACHE_DIR, CONTROLLER_FILES, layOutImage, NODE_FLAGS } from '../../../images/tree.ts';
import { freePort } from '../../../src/local/ports.ts';
import { parseRunnerResult } from '../../../src/schemas/result.ts';
import { testStack } from '../../env/index.ts';
import { FIXTURES, TEST_HMAC_KEY, tofuPath } from '../runner/runner-process.ts';

// The two images without a container engine: each Dockerfile's build stage lays its tree out with
// images/tree.ts and its final stage copies that tree, whole, onto gcr.io/distroless/cc-debian12 (glibc,
// libstdc++, /etc/passwd with `nonroot`, /tmp). Here the same tree goes onto a root holding only what that
// base holds for our binaries (the C libraries they load, taken from this Debian 12 host), and runs chrooted
// as the image's user with a fresh /proc, as a container runtime would run it. The controller answers
// /readyz and /events against the test stack and its relay bundle starts watching; the runner image's
// `runner copy` fills /captf/bin, which then runs an apply in an empty root (docs/image-contract.md).

const repoRoot = join(import.meta.dirname, '..', '..', '..');
const NONROOT = '65532:65532';
const roots: string[] = [];

/** A temp directory removed after the file's tests. */
function tempRoot(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  roots.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

interface Dockerfile {
  /** Instructions per stage, in order: `[keyword, rest of line]`. */
  stages: { from: string; instructions: [string, string][] }[];
}

function readDockerfile(name: string): Dockerfile {
  const stages: Dockerfile['stages'] = [];
  for (const line of readFileSync(join(repoRoot, 'images', `${name}.dockerfile`), 'utf8').split('\n')) {
    const match = /^([A-Z]+)\s+(.*)$/.exec(line.trim());
    if (!match?.[1] || match[2] === undefined) continue;
    if (match[1] === 'FROM') stages.push({ from: match[2], instructions: [] });
    else stages.at(-1)?.instructions.push([match[1], match[2]]);
  }
  return { stages };
}

/** The `node` devDependency's version: the Node the bundles, the compile cache and the tests use. */
function pinnedNodeVersion(): string {
  return (
    JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: { node: string } }
  ).devDependencies.node;
}

/** Checks a Dockerfile's shape: build stage lays out the tree with images/tree.ts; final stage copies it. */
function expectTreeDockerfile(name: 'controller' | 'runner'): { final: [string, string][] } {
  const { stages } = readDockerfile(name);
  expect(stages).toHaveLength(2);
  const [build, final] = stages;
  expect(build?.from).toBe(`node:${pinnedNodeVersion()}-bookworm AS build`);
  for (const [keyword, rest] of build?.instructions ?? []) {
    if (keyword !== 'COPY') continue;
    const [source] = rest.split(/\s+/);
    expect(
      statSync(join(repoRoot, source ?? '')).isFile() || statSync(join(repoRoot, source ?? '')).isDirectory(),
    ).toBe(true);
  }
  const runs = (build?.instructions ?? []).filter(([keyword]) => keyword === 'RUN').map(([, rest]) => rest);
  expect(runs.at(-1)).toContain(`images/tree.ts ${name} /out`);
  expect(final?.from).toBe('gcr.io/distroless/cc-debian12:nonroot');
  const copies = (final?.instructions ?? []).filter(([keyword]) => keyword === 'COPY');
  expect(copies).toEqual([['COPY', '--from=build /out/ /']]);
  expect(final?.instructions).toContainEqual(['USER', NONROOT]);
  return { final: final?.instructions ?? [] };
}

/** The JSON array of an ENTRYPOINT or CMD instruction. */
function execForm(instructions: [string, string][], keyword: string): string[] {
  const found = instructions.find(([k]) => k === keyword);
  return found === undefined ? [] : (JSON.parse(found[1]) as string[]);
}

/** Adds what the distroless base gives our binaries: the libraries `ldd` names, /tmp, /dev/null, /proc. */
function addBase(root: string, binary: string): void {
  const ldd = execFileSync('ldd', [binary], { encoding: 'utf8' });
  for (const path of ldd.matchAll(/(\/\S+\.so[.\d]*)/g)) {
    const library = path[1] ?? '';
    mkdirSync(join(root, dirname(library)), { recursive: true });
    copyFileSync(library, join(root, library));
  }
  // An image's / is 0755 (mkdtemp made it 0700, which would lock the image's own user out).
  chmodSync(root, 0o755);
  for (const dir of ['tmp', 'proc', 'dev', 'etc']) mkdirSync(join(root, dir), { recursive: true });
  chmodSync(join(root, 'tmp'), 0o1777);
  execFileSync('mknod', ['-m', '666', join(root, 'dev/null'), 'c', '1', '3']);
  writeFileSync(
    join(root, 'etc/passwd'),
    'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n',
  );
}

/** argv that runs `command` chrooted into `root` as `user`, with a /proc of its own mount namespace. */
function inRoot(root: string, user: string, command: string[]): string[] {
  return [
    'unshare',
    '--mount',
    '--propagation',
    'private',
    '/bin/sh',
    '-c',
    'mount -t proc proc "$0/proc" && user="$1" && shift && exec chroot --userspec="$user" "$0" "$@"',
    root,
    user,
    ...command,
  ];
}

/** A kubeconfig for the test stack with everything inline (the chroot sees no host path). */
function inlineKubeconfig(): string {
  const stack = testStack();
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'stack',
        cluster: {
          server: stack.apiServerUrl,
          'certificate-authority-data': readFileSync(stack.caPath).toString('base64'),
        },
      },
    ],
    users: [{ name: 'admin', user: { token: stack.adminToken } }],
    contexts: [{ name: 'stack', context: { cluster: 'stack', user: 'admin' } }],
    'current-context': 'stack',
  });
}

function output(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return () => text;
}

async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  log: () => string,
): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await Promise.resolve(check()).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not after 30 s; output:\n${log().slice(-3000)}`);
    await sleep(200);
  }
}

describe('the controller image (images/controller.dockerfile)', () => {
  let root = '';
  let env: Record<string, string> = {};
  const children: ChildProcess[] = [];
  let final: [string, string][] = [];

  beforeAll(() => {
    final = expectTreeDockerfile('controller').final;
    root = tempRoot('captf-image-controller-');
    layOutImage('controller', root);
    addBase(root, join(root, 'usr/local/bin/node'));
    mkdirSync(join(root, 'etc/captf'), { recursive: true });
    writeFileSync(join(root, 'etc/captf/kubeconfig'), inlineKubeconfig(), { mode: 0o644 });
    const declared = final.find(([keyword]) => keyword === 'ENV')?.[1] ?? '';
    env = Object.fromEntries([...declared.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1] ?? '', m[2] ?? '']));
  }, 120_000);

  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('holds Node, both bundles and a warm compile cache, and nothing else', () => {
    expect(readdirSync(root).sort()).toEqual(
      ['app', 'dev', 'etc', 'lib', 'lib64', 'proc', 'tmp', 'usr'].sort(),
    );
    expect(readdirSync(join(root, 'app')).sort()).toEqual(['compile-cache', 'controller', 'relay']);
    for (const path of Object.keys(CONTROLLER_FILES)) expect(statSync(join(root, path)).isFile()).toBe(true);
    expect(env.NODE_COMPILE_CACHE).toBe(COMPILE_CACHE_DIR);
    expect(readdirSync(join(root, COMPILE_CACHE_DIR)).length).toBeGreaterThan(0);
  });

  it('serves /readyz and /events as the non-root user from the read-only tree', async () => {
    const [node, ...entry] = [...execForm(final, 'ENTRYPOINT'), ...execForm(final, 'CMD')];
    // The flags the compile cache was warmed with, or V8 would not use it.
    expect([node, ...entry]).toEqual(['/usr/local/bin/node', ...NODE_FLAGS, '/app/controller/server.mjs']);
    const port = await freePort();
    const token = randomBytes(24).toString('hex');
    const [command, ...args] = inRoot(root, NONROOT, [node ?? '', ...entry]);
    const child = spawn(command ?? '', args, {
      env: {
        ...env,
        PORT: String(port),
        HOST: '127.0.0.1',
        CAPTF_AUTH_TOKEN: token,
        REDIS_URL: testStack().redisUrl,
        KUBECONFIG: '/etc/captf/kubeconfig',
        CAPTF_RUNNER_IMAGE: 'captf.local/runner:dev',
        CAPTF_KEY_PREFIX: `image-${randomBytes(3).toString('hex')}`,
      },
    });
    children.push(child);
    const log = output(child);
    const base = `http://127.0.0.1:${port}`;
    await waitUntil('the image answers /readyz', async () => (await fetch(`${base}/readyz`)).ok, log);
    const event = await fetch(`${base}/events`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'ce-specversion': '1.0',
        'ce-id': randomBytes(8).toString('hex'),
        'ce-source': testStack().apiServerUrl,
        'ce-type': 'dev.knative.apiserver.ref.update',
      },
      body: JSON.stringify({
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'TerraformMachine',
        name: 'not-there',
        namespace: 'default',
      }),
    });
    expect(event.status, log()).toBe(200);
    // A reference-mode event is checked against the object's live version first: this answer needed a GET
    // that the API server answered 404.
    expect(await event.json()).toEqual({ handled: false, reason: 'ObjectGone' });
    // Running as 65532, Node could not have rewritten the root-owned cache: it used what the build wrote.
    expect(log()).not.toMatch(/compile.cache|EACCES/i);

    // infra/lambda/relay.yaml: the image's entrypoint with the relay's bundle as its argument.
    const [relayCommand, ...relayArgs] = inRoot(root, NONROOT, [
      ...execForm(final, 'ENTRYPOINT'),
      '/app/relay/relay.mjs',
    ]);
    const relay = spawn(relayCommand ?? '', relayArgs, {
      env: {
        CAPTF_HANDLER_URL: base,
        CAPTF_AUTH_TOKEN: token,
        REDIS_URL: testStack().redisUrl,
        KUBECONFIG: '/etc/captf/kubeconfig',
        CAPTF_KEY_PREFIX: `image-relay-${randomBytes(3).toString('hex')}`,
        CAPTF_TICK_INTERVAL_MS: '0',
      },
    });
    children.push(relay);
    const relayLog = output(relay);
    await waitUntil('the relay bundle watches', () => relayLog().includes('relay: lease taken'), relayLog);
  }, 90_000);
});

describe('the runner image (images/runner.dockerfile)', () => {
  it('its entrypoint copies the runner out, and the copy runs an apply in an empty root', async () => {
    const { final } = expectTreeDockerfile('runner');
    expect(execForm(final, 'ENTRYPOINT')).toEqual(['/runner']);
    const image = tempRoot('captf-image-runner-');
    layOutImage('runner', image);
    addBase(image, join(image, 'runner'));
    // The Job's init container: `runner copy /captf/bin` into the shared emptyDir (here, inside the image).
    mkdirSync(join(image, 'captf'), { recursive: true });
    chmodSync(join(image, 'captf'), 0o777);
    const [command, ...args] = inRoot(image, NONROOT, ['/runner', 'copy', '/captf/bin']);
    const copied = spawnSync(command ?? '', args, { encoding: 'utf8' });
    expect(copied.status, copied.stderr).toBe(0);

    // The module container: nothing but the copied /captf/bin, the module, its runtime and the run config.
    const empty = tempRoot('captf-image-module-');
    for (const dir of ['captf/module', 'captf/config', 'out', 'dev'])
      mkdirSync(join(empty, dir), { recursive: true });
    execFileSync('mknod', ['-m', '666', join(empty, 'dev/null'), 'c', '1', '3']);
    execFileSync('cp', ['-a', join(image, 'captf/bin'), join(empty, 'captf/bin')]);
    copyFileSync(join(FIXTURES, 'machine/main.tf'), join(empty, 'captf/module/main.tf'));
    copyFileSync(await tofuPath(), join(empty, 'captf/runtime'));
    writeFileSync(
      join(empty, 'captf/config/run.json'),
      JSON.stringify({ version: 1, variables: { name: 'm-image' }, planHmacKey: TEST_HMAC_KEY }),
    );
    const run = spawnSync(
      'chroot',
      [
        empty,
        '/captf/bin/ld.so',
        '--library-path',
        '/captf/bin/lib',
        '/captf/bin/runner',
        'run',
        '--op=apply',
        '--result-file=/out/termination-log',
      ],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const parsed = parseRunnerResult(readFileSync(join(empty, 'out/termination-log'), 'utf8'));
    expect(parsed.ok && parsed.result.result).toBe('succeeded');
    expect(parsed.ok && parsed.result.outputs?.providerID).toMatch(/^captf-test:\/\//);
  }, 120_000);
});
