import { describe, expect, it } from 'vitest';
import { localImageTarget, parseImageReference } from '../../../src/local/node/image-reference.ts';

const digest = `sha256:${'ab'.repeat(32)}`;

describe('parseImageReference', () => {
  const parsed = [
    {
      id: 'P1',
      name: 'local image with a tag',
      image: 'captf.local/runner:dev',
      registry: 'captf.local',
      repository: 'runner',
      tag: 'dev',
      digest: undefined,
    },
    {
      id: 'P2',
      name: 'local image pinned by digest',
      image: `captf.local/module@${digest}`,
      registry: 'captf.local',
      repository: 'module',
      tag: undefined,
      digest,
    },
    {
      id: 'P3',
      name: 'Docker Hub short name gets library/',
      image: 'busybox',
      registry: 'docker.io',
      repository: 'library/busybox',
      tag: undefined,
      digest: undefined,
    },
    {
      id: 'P4',
      name: 'first element without a dot is a path, not a host',
      image: 'team/module:1',
      registry: 'docker.io',
      repository: 'team/module',
      tag: '1',
      digest: undefined,
    },
    {
      id: 'P5',
      name: 'host with a port',
      image: 'localhost:5000/a/b:v1.2',
      registry: 'localhost:5000',
      repository: 'a/b',
      tag: 'v1.2',
      digest: undefined,
    },
  ];
  it.each(parsed)('$id $name', ({ image, registry, repository, tag, digest: expectedDigest }) => {
    expect(parseImageReference(image)).toEqual({
      kind: 'parsed',
      reference: { registry, repository, tag, digest: expectedDigest },
    });
  });

  const invalid = [
    { id: 'I1', name: 'uppercase repository', image: 'captf.local/Bad_Name:1' },
    { id: 'I2', name: 'empty tag', image: 'captf.local/runner:' },
    { id: 'I3', name: 'space inside', image: 'captf.local/run ner' },
    { id: 'I4', name: 'short digest', image: 'captf.local/runner@sha256:abc' },
    { id: 'I5', name: 'empty reference', image: '' },
    { id: 'I6', name: 'name over 255 characters', image: `captf.local/${'a'.repeat(250)}` },
  ];
  it.each(invalid)('$id $name is InvalidImageName material', ({ image }) => {
    const result = parseImageReference(image);
    expect(result.kind).toBe('invalid');
    if (result.kind === 'invalid') expect(result.message).toContain('invalid reference format');
  });
});

describe('localImageTarget', () => {
  const target = (image: string) => {
    const result = parseImageReference(image);
    if (result.kind !== 'parsed') throw new Error(`test image ${image} does not parse`);
    return localImageTarget(result.reference, 'captf.local');
  };
  it('maps <registry>/<name> to image directory <name>, any tag', () => {
    expect(target('captf.local/testbox:anything')).toEqual({
      kind: 'local',
      name: 'testbox',
      digest: undefined,
    });
  });
  it('keeps the digest for the image store to check', () => {
    expect(target(`captf.local/testbox@${digest}`)).toEqual({ kind: 'local', name: 'testbox', digest });
  });
  it('another registry is foreign', () => {
    expect(target('example.invalid/module:1')).toEqual({ kind: 'foreign', reason: 'other-registry' });
  });
  it('a nested repository under the local registry is foreign', () => {
    expect(target('captf.local/a/b:1')).toEqual({ kind: 'foreign', reason: 'nested-repository' });
  });
});
