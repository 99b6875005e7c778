import { constants } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';

/**
 * The image-layout checks (DESIGN.md section 10, docs/image-contract.md): the module directory exists and
 * holds Terraform files, and the runtime is an executable regular file. Run before anything else, so a
 * broken image is reported as `image-layout`, never as a Terraform failure.
 */
export type LayoutCheck = { ok: true } | { ok: false; summary: string };

const TERRAFORM_FILE = /\.tf(\.json)?$/;

/** Checks the module directory and the runtime binary; the summary names the path and what is wrong. */
export async function checkImageLayout(moduleDir: string, runtimePath: string): Promise<LayoutCheck> {
  const module = await stat(moduleDir).catch(() => undefined);
  if (module === undefined) return { ok: false, summary: `module directory ${moduleDir} does not exist` };
  if (!module.isDirectory()) return { ok: false, summary: `module path ${moduleDir} is not a directory` };
  const entries = await readdir(moduleDir).catch(() => undefined);
  if (entries === undefined) return { ok: false, summary: `module directory ${moduleDir} is not readable` };
  if (!entries.some((name) => TERRAFORM_FILE.test(name))) {
    return { ok: false, summary: `module directory ${moduleDir} holds no .tf or .tf.json file` };
  }
  const runtime = await stat(runtimePath).catch(() => undefined);
  if (runtime === undefined) return { ok: false, summary: `runtime ${runtimePath} does not exist` };
  if (!runtime.isFile()) return { ok: false, summary: `runtime ${runtimePath} is not a regular file` };
  const executable = await access(runtimePath, constants.X_OK).then(
    () => true,
    () => false,
  );
  if (!executable) return { ok: false, summary: `runtime ${runtimePath} is not executable` };
  return { ok: true };
}
