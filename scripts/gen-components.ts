import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { locateBinaries } from '../src/local/binaries.ts';
import { CLUSTERCTL_FILES, componentsYaml, metadataYaml } from './clusterctl.ts';

/**
 * Writes clusterctl's metadata.yaml and infrastructure-components.yaml (infra/clusterctl/) with the pinned
 * kubectl's kustomize. Run after `npm run gen:crds` or any change under infra/: `npm run gen:components`.
 */
const root = join(import.meta.dirname, '..');
const rendered = execFileSync(locateBinaries().kubectl, ['kustomize', join(root, 'infra')], {
  encoding: 'utf8',
});
const files: [string, string][] = [
  [CLUSTERCTL_FILES.metadata, metadataYaml()],
  [CLUSTERCTL_FILES.components, componentsYaml(rendered)],
];
for (const [path, text] of files) {
  const file = join(root, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`gen-components: wrote ${file}`);
}
