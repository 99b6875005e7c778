import { open } from 'node:fs/promises';
import { join } from 'node:path';
import {
  parseRunConfig,
  RUN_CONFIG_FILE,
  RUN_CONFIG_MAX_BYTES,
  type RunConfig,
} from '../schemas/run-config.ts';

/** Outcome of reading the run config from the config dir; messages never carry file contents (secrets). */
export type RunConfigRead = { ok: true; config: RunConfig } | { ok: false; message: string };

/** Reads and validates `<configDir>/run.json` (the per-run Secret, mounted read-only). */
export async function readRunConfig(configDir: string): Promise<RunConfigRead> {
  const path = join(configDir, RUN_CONFIG_FILE);
  let text: string;
  try {
    const file = await open(path, 'r');
    try {
      const buffer = Buffer.alloc(RUN_CONFIG_MAX_BYTES + 1);
      const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
      if (bytesRead > RUN_CONFIG_MAX_BYTES) {
        return { ok: false, message: `read run config: ${path} exceeds ${RUN_CONFIG_MAX_BYTES} bytes` };
      }
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await file.close();
    }
  } catch (cause) {
    return {
      ok: false,
      message: `read run config: ${path}: ${(cause as NodeJS.ErrnoException).code ?? 'unreadable'}`,
    };
  }
  return parseRunConfig(text);
}
