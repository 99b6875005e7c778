import { chmod, copyFile, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isSea } from 'node:sea';

/**
 * `runner copy <dest>`: what the Job's init container runs (DESIGN.md section 9). Puts this very executable
 * at `dest` (or `dest/runner` when `dest` is a directory, such as the `/captf/bin` emptyDir), executable by
 * anyone, through a temp file and a rename so the `source` container never sees half a file.
 */
export type CopyOutcome = { ok: true; path: string } | { ok: false; message: string };

/** The file name used when the destination is a directory. */
export const RUNNER_FILE = 'runner';

/** Copies the running single executable to `dest`; only the bundled runner can copy itself. */
export async function copySelf(dest: string, executablePath: string): Promise<CopyOutcome> {
  if (!isSea()) {
    return { ok: false, message: 'copy runner: not the bundled executable (run `npm run build:runner`)' };
  }
  const target = (await stat(dest).catch(() => undefined))?.isDirectory() ? join(dest, RUNNER_FILE) : dest;
  const partial = `${target}.partial`;
  try {
    await copyFile(executablePath, partial);
    await chmod(partial, 0o755);
    await rename(partial, target);
  } catch (cause) {
    return {
      ok: false,
      message: `copy runner to ${target}: ${(cause as NodeJS.ErrnoException).code ?? 'failed'}`,
    };
  }
  return { ok: true, path: target };
}
