// `npm run bench`: runs every bench/*.bench.ts file in its own Node process, one after another, and fails
// when any of them fails. `npm run bench -- core redis` runs only the files whose name contains one of the
// words (the runner bench takes minutes; the others can run alone). Words starting with `--` are options,
// passed to every file run (`npm run bench -- fleet --machines=20 --clusters=2`).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const dir = import.meta.dirname;
const filters = process.argv.slice(2).filter((word) => !word.startsWith('--'));
const options = process.argv.slice(2).filter((word) => word.startsWith('--'));
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => filters.length === 0 || filters.some((word) => name.includes(word)))
  .sort();
if (files.length === 0) {
  process.stderr.write(`bench: no bench/*.bench.ts file matches ${filters.join(', ')}\n`);
  process.exitCode = 1;
}
let failed = 0;
for (const file of files) {
  process.stdout.write(`# ${file}\n`);
  const started = performance.now();
  const run = spawnSync(process.execPath, [join(dir, file), ...options], { stdio: 'inherit' });
  process.stdout.write(`# ${file}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  if (run.status !== 0) failed += 1;
}
if (files.length > 0) process.exitCode = failed === 0 ? 0 : 1;
