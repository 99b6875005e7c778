import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCrd, crdFileName } from '../src/schemas/kinds/crd.ts';
import { crdYaml } from '../src/schemas/kinds/crd-yaml.ts';
import { KIND_DEFINITIONS } from '../src/schemas/kinds/registry.ts';

/** Writes infra/crds/*.yaml from the zod schemas. Run: `npm run gen:crds`. */
const dir = join(import.meta.dirname, '..', 'infra', 'crds');
for (const definition of KIND_DEFINITIONS) {
  const file = join(dir, crdFileName(definition));
  writeFileSync(file, crdYaml(buildCrd(definition)));
  console.log(`gen-crds: wrote ${file}`);
}
