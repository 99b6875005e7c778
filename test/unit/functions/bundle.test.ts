import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUNDLES, bundleBuildReason } from '../../../functions/bundle.ts';

// When the plugin bundle is rebuilt (functions/bundle.ts): its esbuild inputs, and for its krew release
// the files it is packed from and the files it packs.

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A repository root with the plugin built at t=2000 s from inputs of t=1000 s; answers the root. */
function builtPlugin(): string {
  const root = mkdtempSync(join(tmpdir(), 'captf-bundle-'));
  roots.push(root);
  const { outfile, krew } = BUNDLES.plugin;
  const write = (path: string, at: number, text = '') => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
    utimesSync(join(root, path), at, at);
  };
  for (const input of [
    'functions/kubectl-captf.ts',
    'functions/bundle.ts',
    krew.manifest,
    'LICENSE',
    'package.json',
  ])
    write(input, 1000);
  write('dist/meta/plugin.json', 2000, JSON.stringify({ inputs: { 'functions/kubectl-captf.ts': {} } }));
  for (const built of [outfile, join(krew.dir, 'kubectl-captf.tar.gz'), join(krew.dir, 'captf.yaml')])
    write(built, 2000);
  return root;
}

describe('bundleBuildReason: the plugin and its krew release', () => {
  it('a build newer than every input, its release in place, is current', () => {
    expect(bundleBuildReason('plugin', builtPlugin())).toBeUndefined();
  });

  it('a release archive gone makes it stale', () => {
    const root = builtPlugin();
    rmSync(join(root, BUNDLES.plugin.krew.dir, 'kubectl-captf.tar.gz'));
    expect(bundleBuildReason('plugin', root)).toBe('dist/krew/kubectl-captf.tar.gz is missing');
  });

  it.each([BUNDLES.plugin.krew.manifest, 'LICENSE', 'package.json'])(
    '%s changed since makes it stale',
    (input) => {
      const root = builtPlugin();
      utimesSync(join(root, input), 3000, 3000);
      expect(bundleBuildReason('plugin', root)).toBe(`${input} is newer than ${BUNDLES.plugin.outfile}`);
    },
  );
});
