import { describe, expect, it } from 'vitest';
import type {
  ClusterFactPart,
  ClusterFactsStore,
  StoredFact,
} from '../../../src/adapters/redis/cluster-facts.ts';
import { clusterFactsCacheOf } from '../../../src/step/cluster-facts.ts';

// The cluster facts cache's encoding over its store (src/step/cluster-facts.ts): what a step writes it
// reads back, a version known without content or a payload that does not parse reads as not cached, an
// absence reads as absent, Redis down reads as nothing cached, and a dry run's cache writes nothing.

function memoryStore(down = false): { store: ClusterFactsStore; kept: Map<string, StoredFact> } {
  const kept = new Map<string, StoredFact>();
  const unknown = { kind: 'unknown' as const, cause: new Error('down') };
  const store = {
    get: async (ns: string, cluster: string) => {
      if (down) return unknown;
      const facts: Partial<Record<ClusterFactPart, StoredFact>> = {};
      for (const part of ['owning', 'capi'] as const) {
        const fact = kept.get(`${ns}/${cluster}/${part}`);
        if (fact) facts[part] = fact;
      }
      return { kind: 'found' as const, facts };
    },
    put: async (ns: string, cluster: string, part: ClusterFactPart, fact: StoredFact) => {
      if (down) return unknown;
      kept.set(`${ns}/${cluster}/${part}`, fact);
      return { kind: 'stored' as const };
    },
    drop: async (ns: string, cluster: string, part: ClusterFactPart) => {
      kept.delete(`${ns}/${cluster}/${part}`);
      return { kind: 'done' as const };
    },
  } as unknown as ClusterFactsStore;
  return { store, kept };
}

const owning = {
  view: { name: 'c', ready: true, defaultsJobs: { activeDeadlineSeconds: 300 }, exports: { vpc: 'v-1' } },
  version: { uid: 'u1', resourceVersion: '10' },
};
const capi = {
  view: { paused: false, infrastructureProvisioned: true },
  version: { uid: 'k1', resourceVersion: '11' },
};

describe('clusterFactsCacheOf', () => {
  it('reads back what was remembered; an absent object reads as absent', async () => {
    const { store } = memoryStore();
    const cache = clusterFactsCacheOf(store, { writes: true });
    await cache.remember('ns', 'c', { owning, capi });
    expect(await cache.read('ns', 'c')).toEqual({ owning, capi });
    await cache.remember('ns', 'd', { capi: { view: undefined, version: undefined } });
    expect(await cache.read('ns', 'd')).toEqual({ capi: { view: undefined, version: undefined } });
  });

  it('a version without content, or a payload that does not parse, reads as not cached', async () => {
    const { store, kept } = memoryStore();
    const cache = clusterFactsCacheOf(store, { writes: true });
    await cache.remember('ns', 'c', { owning, capi });
    await cache.outdate('ns', 'c', { uid: 'u1', resourceVersion: '12' });
    expect(kept.get('ns/c/owning')).toEqual({ uid: 'u1', resourceVersion: '12', payload: '' });
    kept.set('ns/c/capi', { uid: 'k1', resourceVersion: '11', payload: '{"paused":"yes"}' });
    expect(await cache.read('ns', 'c')).toEqual({});
    kept.set('ns/c/capi', { uid: 'k1', resourceVersion: '11', payload: '{' });
    expect(await cache.read('ns', 'c')).toEqual({});
  });

  it('Redis down reads as nothing cached and never throws; a read-only cache writes nothing', async () => {
    const down = clusterFactsCacheOf(memoryStore(true).store, { writes: true });
    expect(await down.read('ns', 'c')).toEqual({});
    await expect(down.remember('ns', 'c', { owning })).resolves.toBeUndefined();
    const { store, kept } = memoryStore();
    const dry = clusterFactsCacheOf(store, { writes: false });
    await dry.remember('ns', 'c', { owning, capi });
    await dry.outdate('ns', 'c', { uid: 'u1', resourceVersion: '12' });
    expect(kept.size).toBe(0);
  });
});
