import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { envReferences, expandReferences, resolveEnv } from '../../../src/local/node/container-env.ts';

describe('expandReferences (Kubernetes expansion rules)', () => {
  const context = new Map([
    ['A', 'alpha'],
    ['EMPTY', ''],
  ]);
  const rows = [
    { id: 'X1', name: 'a known reference', input: 'x-$(A)-y', out: 'x-alpha-y' },
    { id: 'X2', name: 'an unknown reference stays as written', input: '$(B)', out: '$(B)' },
    { id: 'X3', name: '$$ escapes a dollar', input: '$$(A)', out: '$(A)' },
    { id: 'X4', name: 'an unclosed reference stays', input: 'a$(A', out: 'a$(A' },
    { id: 'X5', name: 'a lone $ and a trailing $ stay', input: '$x $', out: '$x $' },
    { id: 'X6', name: 'an empty value expands to nothing', input: '[$(EMPTY)]', out: '[]' },
  ];
  it.each(rows)('$id $name', ({ input, out }) => {
    expect(expandReferences(input, context)).toBe(out);
  });
});

const pod: V1Pod = {
  metadata: { name: 'p', namespace: 'team-a', uid: 'u-1', labels: { app: 'x' } },
  spec: { nodeName: 'captf-local-node', containers: [] },
  status: { podIP: '127.0.0.1' },
};
const sources = {
  secrets: new Map([['run', { token: 's3cret', extra: 'e' }]]),
  configMaps: new Map([['settings', { mode: 'fast' }]]),
};
const base = new Map([['PATH', '/usr/bin']]);

describe('resolveEnv', () => {
  it('builds base, envFrom, env in order; later values see earlier ones; refs are not expanded', () => {
    const container: V1Container = {
      name: 'source',
      envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'CM_' }],
      env: [
        { name: 'FIRST', value: 'one' },
        { name: 'SECOND', value: '$(FIRST)-$(CM_mode)-$(PATH)' },
        { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'run', key: 'token' } } },
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'FIRST', value: 'replaced' },
      ],
    };
    const result = resolveEnv(pod, container, sources, base);
    expect(result).toEqual({
      kind: 'resolved',
      env: [
        ['PATH', '/usr/bin'],
        ['CM_mode', 'fast'],
        ['FIRST', 'replaced'],
        ['SECOND', 'one-fast-/usr/bin'],
        ['TOKEN', 's3cret'],
        ['POD', 'p'],
        ['APP', 'x'],
      ],
    });
  });

  const errors = [
    {
      id: 'CE1',
      name: 'a missing Secret',
      env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'gone', key: 'k' } } }],
      message: 'secret "gone" not found',
    },
    {
      id: 'CE2',
      name: 'a missing key',
      env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'run', key: 'nope' } } }],
      message: "couldn't find key nope in Secret team-a/run",
    },
    {
      id: 'CE3',
      name: 'a missing ConfigMap key',
      env: [{ name: 'T', valueFrom: { configMapKeyRef: { name: 'settings', key: 'nope' } } }],
      message: "couldn't find key nope in ConfigMap team-a/settings",
    },
  ];
  it.each(errors)('$id $name is a CreateContainerConfigError', ({ env, message }) => {
    expect(resolveEnv(pod, { name: 'c', env }, sources, base)).toEqual({ kind: 'config-error', message });
  });

  it('an optional reference to a missing key is skipped', () => {
    const env = [{ name: 'T', valueFrom: { secretKeyRef: { name: 'gone', key: 'k', optional: true } } }];
    expect(resolveEnv(pod, { name: 'c', env }, sources, base)).toEqual({
      kind: 'resolved',
      env: [['PATH', '/usr/bin']],
    });
  });
});

describe('envReferences', () => {
  it('collects the Secrets and ConfigMaps env and envFrom read', () => {
    const refs = envReferences({
      name: 'c',
      envFrom: [{ secretRef: { name: 'a' } }, { configMapRef: { name: 'b' } }],
      env: [
        { name: 'X', valueFrom: { secretKeyRef: { name: 'c', key: 'k' } } },
        { name: 'Y', valueFrom: { configMapKeyRef: { name: 'd', key: 'k' } } },
        { name: 'Z', value: 'literal' },
      ],
    });
    expect([...refs.secrets].sort()).toEqual(['a', 'c']);
    expect([...refs.configMaps].sort()).toEqual(['b', 'd']);
  });
});
