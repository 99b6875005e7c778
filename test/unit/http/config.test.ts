import { expect, it } from 'vitest';
import { readConfig } from '../../../src/config.ts';

const base = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  CAPTF_RUNNER_IMAGE: 'ghcr.io/captf/runner:1',
  CAPTF_AUTH_TOKEN: 'x'.repeat(32),
};

it('defaults follow DESIGN.md: 200 / 20 Job slots, 10 min sync period, in-cluster kube', () => {
  const result = readConfig(base);
  expect(result).toMatchObject({
    ok: true,
    config: {
      maxActiveJobs: 200,
      clusterMaxActiveJobs: 20,
      syncPeriodSeconds: 600,
      kube: { mode: 'in-cluster' },
      auth: { mode: 'bearer' },
      keyPrefix: 'captf',
    },
  });
});

it.each([
  {
    id: 'C-no-token',
    name: 'no token and no explicit opt-out',
    env: { ...base, CAPTF_AUTH_TOKEN: undefined },
    says: 'CAPTF_AUTH_TOKEN: required',
  },
  {
    id: 'C-short-token',
    name: 'a short token',
    env: { ...base, CAPTF_AUTH_TOKEN: 'short' },
    says: 'at least 32',
  },
  {
    id: 'C-redis',
    name: 'a REDIS_URL that is not redis://',
    env: { ...base, REDIS_URL: 'http://x' },
    says: 'REDIS_URL',
  },
  {
    id: 'C-runner',
    name: 'no runner image',
    env: { ...base, CAPTF_RUNNER_IMAGE: undefined },
    says: 'CAPTF_RUNNER_IMAGE',
  },
  {
    id: 'C-flag',
    name: 'an auth flag that is not a boolean word',
    env: { ...base, CAPTF_AUTH_DISABLED: 'maybe' },
    says: 'CAPTF_AUTH_DISABLED',
  },
])('$id rejects $name', ({ env, says }) => {
  const result = readConfig(env);
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.message).toContain(says);
});

it('auth is disabled only by the explicit flag', () => {
  const result = readConfig({
    ...base,
    CAPTF_AUTH_TOKEN: undefined,
    CAPTF_AUTH_DISABLED: 'true',
    KUBECONFIG: '/k',
  });
  expect(result).toMatchObject({
    ok: true,
    config: { auth: { mode: 'disabled' }, kube: { mode: 'kubeconfig', path: '/k' } },
  });
});
