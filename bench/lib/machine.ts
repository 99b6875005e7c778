import { availableParallelism, loadavg } from 'node:os';

/**
 * The conditions a bench ran under, printed first: figures from a loaded machine are not comparable with
 * figures from an idle one, and the reader should be able to tell which is which.
 */
export function printMachine(): void {
  const [oneMinute] = loadavg();
  process.stdout.write(
    `node ${process.version}, ${availableParallelism()} cores, load average ${(oneMinute ?? 0).toFixed(1)} (1 min)\n`,
  );
}
