import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CLUSTERCTL_FILES } from '../../../scripts/clusterctl.ts';

// The shipped Redis is Valkey (BSD-3-Clause) pinned by digest: Redis 7.4 and later are under no
// open-source licence, and a floating tag would change what an apply runs underneath the tests.

const root = join(import.meta.dirname, '..', '..', '..');

/** `valkey/valkey:<8.x.y>@sha256:<64 hex>`: the official image, a version tag and its content digest. */
const PINNED_VALKEY = /^valkey\/valkey:8\.\d+\.\d+@sha256:[0-9a-f]{64}$/;

interface Workload {
  kind: string;
  metadata: { name: string };
  spec?: { template?: { spec?: { containers?: { name: string; image: string }[] } } };
}

/**
 * The image a manifest runs when nobody overrides it: the components write it as a clusterctl variable's
 * default (`${CAPTF_REDIS_IMAGE:=…}`) and in full (`docker.io/…`), because clusterctl refuses short names.
 */
function defaultImage(image: string): string {
  const fallback = /^\$\{[A-Z_]+:=(.+)\}$/.exec(image)?.[1] ?? image;
  return fallback.replace(/^docker\.io\//, '');
}

function redisImages(path: string): string[] {
  return parseAllDocuments(readFileSync(join(root, path), 'utf8'))
    .map((doc) => doc.toJS() as Workload)
    .filter((doc) => doc.kind === 'Deployment' && doc.metadata.name === 'captf-redis')
    .flatMap((doc) => doc.spec?.template?.spec?.containers ?? [])
    .map((container) => defaultImage(container.image));
}

it.each([
  { id: 'infra/redis/redis.yaml', path: 'infra/redis/redis.yaml' },
  { id: 'the clusterctl components', path: CLUSTERCTL_FILES.components },
  { id: 'the Knative clusterctl components', path: CLUSTERCTL_FILES.componentsKnative },
])('$id: the Redis Deployment runs valkey/valkey pinned by an @sha256: digest', ({ path }) => {
  const images = redisImages(path);
  expect(images).toHaveLength(1);
  expect(images[0]).toMatch(PINNED_VALKEY);
});

it('the manifest and both components files pin the same digest', () => {
  expect(redisImages(CLUSTERCTL_FILES.components)).toEqual(redisImages('infra/redis/redis.yaml'));
  expect(redisImages(CLUSTERCTL_FILES.componentsKnative)).toEqual(redisImages('infra/redis/redis.yaml'));
});
