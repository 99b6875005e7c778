import { z } from 'zod';

/**
 * An environment value holding a comma-separated list (`a, b,c`): split, each entry trimmed, empty entries
 * dropped. The caller pipes the array into what each entry must be.
 */
export function commaList(): z.ZodPipe<z.ZodString, z.ZodTransform<string[], string>> {
  return z.string().transform((text) =>
    text
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean),
  );
}
