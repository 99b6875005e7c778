/**
 * Bounded concurrency with a start gate: runs `work` over `items` with at most `concurrency` at once, and
 * starts an item only while `mayStart()` is true (the `/tick` time budget, DESIGN.md section 8). Items never
 * started are reported as such so the caller can hand them back.
 */

/** One item's fate. */
export type PoolResult<T, R> =
  | { state: 'done'; item: T; value: R }
  | { state: 'failed'; item: T; error: unknown }
  | { state: 'not-started'; item: T };

/** Runs the pool; resolves when every started item settled. Never rejects. */
export async function runBounded<T, R>(
  items: readonly T[],
  concurrency: number,
  mayStart: () => boolean,
  work: (item: T) => Promise<R>,
): Promise<Array<PoolResult<T, R>>> {
  const results: Array<PoolResult<T, R>> = items.map((item) => ({ state: 'not-started', item }));
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length && mayStart()) {
      const index = next++;
      const item = items[index] as T;
      try {
        results[index] = { state: 'done', item, value: await work(item) };
      } catch (error) {
        results[index] = { state: 'failed', item, error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, lane));
  return results;
}
