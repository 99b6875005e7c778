import { z } from 'zod';

/**
 * An optional environment value whose empty string means unset: a deployment template passes every
 * setting, with `""` for the ones left at their default (serverless.yml's parameters, a Secret key that is
 * not there), and an empty value must read as if the variable were absent, not be refused.
 */
export function unsetWhenEmpty<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (value === '' ? undefined : value), schema.optional());
}
