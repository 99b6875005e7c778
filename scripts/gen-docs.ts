import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { conditionsReference, eventsReference, kindsReference, REFERENCE_FILES } from './reference-docs.ts';

/** Writes docs/reference/*.md from the code's tables. Run: `npm run gen:docs`. */
const root = join(import.meta.dirname, '..');
const files: [string, string][] = [
  [REFERENCE_FILES.conditions, conditionsReference()],
  [REFERENCE_FILES.events, eventsReference()],
  [REFERENCE_FILES.kinds, kindsReference()],
];
for (const [path, text] of files) {
  const file = join(root, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`gen-docs: wrote ${file}`);
}
