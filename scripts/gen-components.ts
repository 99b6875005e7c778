import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { locateBinaries } from '../src/local/binaries.ts';
import { CLUSTERCTL_FILES, COMPONENT_SOURCES, componentsYaml, metadataYaml } from './clusterctl.ts';

/**
 * Writes clusterctl's metadata.yaml and both flavours of the components (infra/clusterctl/) with the pinned
 * kubectl's kustomize. Run after `npm run gen:crds` or any change under infra/: `npm run gen:components`.
 */
const root = join(import.meta.dirname, '..');
const render = (flavour: keyof typeof COMPONENT_SOURCES): string => {
  const { dir, args } = COMPONENT_SOURCES[flavour];
  const rendered = execFileSync(locateBinaries().kubectl, ['kustomize', ...args, join(root, dir)], {
    encoding: 'utf8',
  });
  return componentsYaml(rendered, `${dir}/ (kubectl kustomize ${[...args, dir].join(' ')})`);
};
const files: [string, string][] = [
  [CLUSTERCTL_FILES.metadata, metadataYaml()],
  [CLUSTERCTL_FILES.components, render('components')],
  [CLUSTERCTL_FILES.componentsKnative, render('componentsKnative')],
];
for (const [path, text] of files) {
  const file = join(root, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`gen-components: wrote ${file}`);
}
