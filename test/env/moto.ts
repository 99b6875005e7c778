import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readVersions } from '../../src/local/binaries.ts';

/**
 * The path of moto's server, installed by scripts/lib.sh into `$CAPTF_CACHE/bin/moto-v<MOTO_VERSION>` (a
 * venv of its own). Throws naming the command that installs it when it is missing: a missing real
 * component fails loudly.
 */
export function locateMotoServer(env: NodeJS.ProcessEnv = process.env): string {
  const version = readVersions().MOTO_VERSION;
  if (!version) throw new Error('scripts/versions.env names no MOTO_VERSION');
  const path = join(
    env.CAPTF_CACHE ?? join(homedir(), '.cache', 'captf'),
    'bin',
    `moto-v${version}`,
    'bin',
    'moto_server',
  );
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(
      `moto_server is not installed at ${path}: run \`bash scripts/setup.sh\` (scripts/lib.sh ensure_moto_server)`,
    );
  }
  return path;
}
