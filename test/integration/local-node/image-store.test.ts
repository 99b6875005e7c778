import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRootfs, type LocalImage, pullLocalImage } from '../../../src/local/node/image-store.ts';

// The local image store on a real filesystem: digests, links to host tools, per-container copies.

let root: string;
const tools = { tofu: '/opt/tools/tofu' };

function writeImage(name: string, files: Record<string, string>, executable: string[] = []): string {
  const dir = join(root, 'images', name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  for (const path of executable) chmodSync(join(dir, path), 0o755);
  return dir;
}

function pulled(result: ReturnType<typeof pullLocalImage>): LocalImage {
  if (result.kind !== 'pulled') throw new Error(`expected a pull, got: ${result.message}`);
  return result.image;
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'captf-image-store-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('pullLocalImage', () => {
  it('the content digest is stable, and changes with a file, its executable bit, or the config', () => {
    const dir = writeImage('module', {
      'captf/module/main.tf': 'a',
      'image.json': '{"links":{"captf/runtime":"tofu"}}',
    });
    const images = [join(root, 'images')];
    const first = pulled(pullLocalImage('module', undefined, images, tools)).digest;
    expect(first).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pulled(pullLocalImage('module', undefined, images, tools)).digest).toBe(first);
    writeFileSync(join(dir, 'captf/module/main.tf'), 'b');
    const second = pulled(pullLocalImage('module', undefined, images, tools)).digest;
    expect(second).not.toBe(first);
    chmodSync(join(dir, 'captf/module/main.tf'), 0o755);
    const third = pulled(pullLocalImage('module', undefined, images, tools)).digest;
    expect(third).not.toBe(second);
    writeFileSync(join(dir, 'image.json'), '{}');
    expect(pulled(pullLocalImage('module', undefined, images, tools)).digest).not.toBe(third);
  });

  it('a pinned digest pulls only while the directory still has it', () => {
    const dir = writeImage('module', { 'captf/module/main.tf': 'a' });
    const images = [join(root, 'images')];
    const digest = pulled(pullLocalImage('module', undefined, images, tools)).digest;
    expect(pullLocalImage('module', digest, images, tools).kind).toBe('pulled');
    writeFileSync(join(dir, 'captf/module/main.tf'), 'changed');
    const stale = pullLocalImage('module', digest, images, tools);
    expect(stale).toMatchObject({ kind: 'failed' });
    if (stale.kind === 'failed') expect(stale.message).toContain('manifest unknown');
  });

  const failures: {
    id: string;
    name: string;
    files: Record<string, string>;
    image: string;
    message: string;
  }[] = [
    { id: 'F1', name: 'no such directory', files: {}, image: 'absent', message: 'no image directory absent' },
    {
      id: 'F2',
      name: 'image.json is not JSON',
      files: { 'image.json': '{' },
      image: 'broken',
      message: 'invalid image config',
    },
    {
      id: 'F3',
      name: 'image.json has an unknown field',
      files: { 'image.json': '{"entrypoin":[]}' },
      image: 'typo',
      message: 'invalid image config',
    },
    {
      id: 'F4',
      name: 'a link to a tool the node lacks',
      files: { 'image.json': '{"links":{"captf/runtime":"terraform"}}' },
      image: 'needs-terraform',
      message: 'tool terraform, which this node lacks',
    },
  ];
  it.each(failures)('$id $name fails the pull', ({ files, image, message }) => {
    if (Object.keys(files).length > 0) writeImage(image, files);
    const result = pullLocalImage(image, undefined, [join(root, 'images')], tools);
    expect(result.kind).toBe('failed');
    if (result.kind === 'failed') expect(result.message).toContain(message);
  });

  it('searches the image directories in order', () => {
    writeImage('same', { 'from-first': '1' });
    const second = join(root, 'more');
    mkdirSync(join(second, 'same'), { recursive: true });
    writeFileSync(join(second, 'same', 'from-second'), '2');
    expect(pulled(pullLocalImage('same', undefined, [join(root, 'images'), second], tools)).dir).toBe(
      join(root, 'images', 'same'),
    );
    expect(pulled(pullLocalImage('same', undefined, [second], tools)).dir).toBe(join(second, 'same'));
  });
});

describe('createRootfs', () => {
  it('copies the image without its config, keeps modes, and links tools; writes never reach the image', () => {
    writeImage(
      'module',
      {
        'captf/module/main.tf': 'a',
        'captf/run.sh': '#!/bin/sh\n',
        'image.json': '{"links":{"captf/runtime":"tofu"}}',
      },
      ['captf/run.sh'],
    );
    const image = pulled(pullLocalImage('module', undefined, [join(root, 'images')], tools));
    const rootfs = join(root, 'pod', 'rootfs');
    expect([...createRootfs(image, rootfs)]).toEqual(['captf']);
    expect(lstatSync(join(rootfs, 'image.json'), { throwIfNoEntry: false })).toBeUndefined();
    expect(lstatSync(join(rootfs, 'captf/run.sh')).mode & 0o111).not.toBe(0);
    expect(readlinkSync(join(rootfs, 'captf/runtime'))).toBe('/opt/tools/tofu');
    writeFileSync(join(rootfs, 'captf/module/main.tf'), 'written by a container');
    const again = pulled(pullLocalImage('module', undefined, [join(root, 'images')], tools));
    expect(again.digest).toBe(image.digest);
  });
});
