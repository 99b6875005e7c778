import { constants } from 'node:fs';
import { access, open, readdir, stat } from 'node:fs/promises';

/**
 * The image-layout checks (DESIGN.md section 10, docs/image-contract.md): the module directory exists and
 * holds Terraform files, and the runtime is an executable ELF file. Run before anything else, so a
 * broken image is reported as `image-layout`, never as a Terraform failure.
 */
export type LayoutCheck = { ok: true } | { ok: false; summary: string };

const TERRAFORM_FILE = /\.tf(\.json)?$/;
/** The first bytes of every ELF file: the runtime must be a Linux binary (Terraform and OpenTofu are). */
const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

async function startsWithElfMagic(path: string): Promise<boolean> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(ELF_MAGIC.length);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    return bytesRead === head.length && head.equals(ELF_MAGIC);
  } finally {
    await file.close();
  }
}

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
  // Without this check the kernel's ENOEXEC would send the C library to /bin/sh, and the step would fail
  // with the shell's exit code instead of an image-layout error.
  const elf = await startsWithElfMagic(runtimePath).catch(() => false);
  if (!elf) return { ok: false, summary: `runtime ${runtimePath} is not an ELF executable` };
  return { ok: true };
}
