import { chmod, copyFile, mkdir, readFile, rename } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { isSea } from 'node:sea';
import { LIB_DIR, LOADER_FILE, RUNNER_FILE } from '../schemas/job-contract.ts';

/**
 * `runner copy <dest>`: what the Job's init container runs (DESIGN.md section 9). Fills the directory
 * `dest` (the `/captf/bin` emptyDir) with everything the runner needs, so the module image needs nothing
 * (docs/image-contract.md):
 *   dest/runner       this single executable
 *   dest/ld.so        the dynamic loader it runs under
 *   dest/lib/*        the shared libraries it loaded (libc, libstdc++, libm, libgcc_s, …)
 * The `source` container then runs `dest/ld.so --library-path dest/lib dest/runner run …`. Each file goes
 * through a temp name and a rename, so the `source` container never sees half a file.
 */
export type CopyOutcome = { ok: true; files: number } | { ok: false; message: string };

/** Shared objects mapped into a process, from the text of `/proc/self/maps`: absolute paths, each once. */
export function mappedSharedObjects(maps: string): string[] {
  const paths = new Set<string>();
  for (const line of maps.split('\n')) {
    const path = line.slice(line.indexOf('/'));
    if (line.includes('/') && /\.so(\.\d+)*$/.test(path)) paths.add(path);
  }
  return [...paths];
}

/** The dynamic loader among mapped shared objects (glibc `ld-linux-*`, musl `ld-musl-*`). */
export function loaderOf(objects: readonly string[]): string | undefined {
  return objects.find((path) => /^ld-(linux|musl)/.test(basename(path)));
}

/**
 * The name a library is looked up by: its major-version soname (`libstdc++.so.6.0.30` -> `libstdc++.so.6`),
 * the convention every distribution's symlinks follow; /proc/self/maps shows the resolved file.
 */
export function sonameOf(path: string): string {
  const name = basename(path);
  return /^(.+\.so\.\d+)(\.\d+)+$/.exec(name)?.[1] ?? name;
}

async function place(source: string, target: string, mode: number): Promise<void> {
  const partial = `${target}.partial`;
  await copyFile(source, partial);
  await chmod(partial, mode);
  await rename(partial, target);
}

/** Copies the running single executable, its loader and its libraries into the directory `dest`. */
export async function copySelf(dest: string, executablePath: string): Promise<CopyOutcome> {
  if (!isSea()) {
    return { ok: false, message: 'copy runner: not the bundled executable (run `npm run build:runner`)' };
  }
  try {
    const objects = mappedSharedObjects(await readFile('/proc/self/maps', 'utf8'));
    const loader = loaderOf(objects);
    await mkdir(join(dest, LIB_DIR), { recursive: true });
    for (const object of objects) await place(object, join(dest, LIB_DIR, sonameOf(object)), 0o755);
    if (loader !== undefined) await place(loader, join(dest, LOADER_FILE), 0o755);
    await place(executablePath, join(dest, RUNNER_FILE), 0o755);
    return { ok: true, files: objects.length + (loader === undefined ? 1 : 2) };
  } catch (cause) {
    return {
      ok: false,
      message: `copy runner to ${dest}: ${(cause as NodeJS.ErrnoException).code ?? 'failed'}`,
    };
  }
}
