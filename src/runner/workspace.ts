import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunConfig } from '../schemas/run-config.ts';

/**
 * The runner's work dir (the `prepare` step): a writable copy of the module (the image's copy may be
 * read-only, and `init` writes `.terraform/` beside it), the generated variables file, the generated backend
 * block and backend config, and a temp dir. Generated files are mode 0600: they hold secrets.
 */
export interface Workspace {
  /** The module copy; the runtime's working directory. */
  moduleDir: string;
  varFile: string;
  /** Absent when the run config has no backend (the module's own configuration decides). */
  backendConfigFile?: string;
  planFile: string;
  tmpDir: string;
}

/**
 * The backend block, written as an override file so it replaces a backend block the module might carry
 * (the image contract says it has none) instead of clashing with it.
 */
const BACKEND_OVERRIDE_FILE = 'captf_backend_override.tf.json';

/**
 * The kubeconfig that points the kubernetes backend at the runner's loopback proxy (src/runner/kube-proxy.ts),
 * beside the other generated files; written by the run once the proxy listens.
 */
export function proxyKubeconfigPath(workDir: string): string {
  return join(workDir, 'captf.kubeconfig');
}

/** Builds the work dir from the module and the run config; throws on I/O errors (the caller reports them). */
export async function prepareWorkspace(
  sourceModuleDir: string,
  workDir: string,
  config: RunConfig,
): Promise<Workspace> {
  const moduleDir = join(workDir, 'module');
  const tmpDir = join(workDir, 'tmp');
  // A leftover copy (a reused work dir) could carry files the module no longer has.
  await rm(moduleDir, { recursive: true, force: true });
  await mkdir(tmpDir, { recursive: true, mode: 0o700 });
  await cp(sourceModuleDir, moduleDir, { recursive: true, verbatimSymlinks: true });
  const varFile = join(workDir, 'captf.tfvars.json');
  await writeFile(varFile, JSON.stringify(config.variables), { mode: 0o600 });
  const workspace: Workspace = { moduleDir, varFile, planFile: join(workDir, 'captf.tfplan'), tmpDir };
  if (config.backend !== undefined) {
    const block = { terraform: { backend: { [config.backend.type]: {} } } };
    await writeFile(join(moduleDir, BACKEND_OVERRIDE_FILE), JSON.stringify(block), { mode: 0o600 });
    workspace.backendConfigFile = join(workDir, 'captf.backend.tfbackend');
    await writeFile(
      workspace.backendConfigFile,
      backendConfigText(config.backend.config, config.backend.labels),
      { mode: 0o600 },
    );
  }
  return workspace;
}

const HCL_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/** An HCL quoted string: JSON-like escapes, plus `$${` and `%%{` so a value is never a template. */
export function hclString(value: string): string {
  let out = '';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    out += HCL_ESCAPES[char] ?? (code < 0x20 ? `\\u${code.toString(16).padStart(4, '0')}` : char);
  }
  // Replacer functions: in a replacement string `$$` would itself mean one `$`.
  return `"${out.replaceAll('${', () => '$${').replaceAll('%{', () => '%%{')}"`;
}

/**
 * The `-backend-config` file: one HCL attribute per key (keys are identifiers, checked by the schema), and
 * the kubernetes backend's `labels` as one HCL object when given.
 */
export function backendConfigText(
  config: Record<string, string | number | boolean>,
  labels?: Readonly<Record<string, string>>,
): string {
  const attributes = Object.entries(config).map(
    ([key, value]) => `${key} = ${typeof value === 'string' ? hclString(value) : String(value)}\n`,
  );
  if (labels !== undefined && Object.keys(labels).length > 0) {
    const pairs = Object.entries(labels).map(([key, value]) => `${hclString(key)} = ${hclString(value)}`);
    attributes.push(`labels = { ${pairs.join(', ')} }\n`);
  }
  return attributes.join('');
}
