import type { KubeReader } from '../adapters/kube/reader.ts';

/**
 * The reads of one step's snapshot, kept for that step: the object, its Jobs, its Secrets, its
 * TerraformPlan, its Cluster API owner and bootstrap data, and whatever cluster facts were read live. A
 * plan made from cached cluster facts that does more than wait is planned again from a live read of the
 * cluster (src/core/cluster-facts.ts); read through the same memo, that second snapshot pays only for the
 * facts the first took from the cache, never for the object, its Jobs or its Secrets again, and is planned
 * from the same view of them. Only the reads of `readSnapshot` (src/step/read.ts) go through it, and it
 * lives as long as one step: a later step reads anew. A failed read is not kept.
 */
export function memoReader(reader: KubeReader): KubeReader {
  const kept = new Map<string, Promise<unknown>>();
  function memo<A extends unknown[], R>(method: string, read: (...args: A) => Promise<R>) {
    return (...args: A): Promise<R> => {
      const key = `${method} ${JSON.stringify(args)}`;
      const known = kept.get(key) as Promise<R> | undefined;
      if (known !== undefined) return known;
      const answer = read(...args);
      kept.set(key, answer);
      answer.catch(() => kept.delete(key));
      return answer;
    };
  }
  const memoized: Partial<KubeReader> = {
    getCustomObject: memo('getCustomObject', (...args: Parameters<KubeReader['getCustomObject']>) =>
      reader.getCustomObject(...args),
    ),
    listCustomObjects: memo('listCustomObjects', (...args: Parameters<KubeReader['listCustomObjects']>) =>
      reader.listCustomObjects(...args),
    ),
    getCapiObject: memo('getCapiObject', (...args: Parameters<KubeReader['getCapiObject']>) =>
      reader.getCapiObject(...args),
    ),
    getSecret: memo('getSecret', (...args: Parameters<KubeReader['getSecret']>) => reader.getSecret(...args)),
    listJobs: memo('listJobs', (...args: Parameters<KubeReader['listJobs']>) => reader.listJobs(...args)),
  };
  // Every other read passes through, bound to the reader (a class with private state).
  return new Proxy(reader, {
    get(target, property, receiver) {
      if (Object.hasOwn(memoized, property)) return memoized[property as keyof KubeReader];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
