/**
 * Tracks steps in progress so graceful shutdown can wait for them (DESIGN.md section 5: a step interrupted
 * mid-way is safe, but finishing it is cheaper than redoing it).
 */
export interface InFlight {
  /** Runs `work`, counting it as in flight until it settles. */
  track<T>(work: () => Promise<T>): Promise<T>;
  /** Resolves when nothing is in flight. */
  drain(): Promise<void>;
  readonly size: number;
}

export function createInFlight(): InFlight {
  const running = new Set<Promise<unknown>>();
  return {
    async track(work) {
      const promise = work();
      running.add(promise);
      try {
        return await promise;
      } finally {
        running.delete(promise);
      }
    },
    async drain() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    get size() {
      return running.size;
    },
  };
}
