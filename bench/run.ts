// `npm run bench`: runs every bench/*.bench.ts file in its own Node process, one after another, and fails
// when any of them fails.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = import.meta.dirname;
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.ts'))
  .sort();
let failed = 0;
for (const file of files) {
  process.stdout.write(`# ${file}\n`);
  const run = spawnSync(process.execPath, [join(dir, file)], { stdio: 'inherit' });
  if (run.status !== 0) failed += 1;
}
process.exitCode = failed === 0 ? 0 : 1;
