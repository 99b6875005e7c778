import { z } from 'zod';

/**
 * Go-style durations as Cluster API users write them (`30m`, `1h30m`, `90s`); the unit is required and only
 * `h`, `m` and `s` are accepted, because the shortest useful interval of a drift check or refresh is seconds.
 */
export const DURATION_PATTERN = '^([0-9]+(h|m|s))+$';

const UNIT_SECONDS: Readonly<Record<'h' | 'm' | 's', number>> = { h: 3600, m: 60, s: 1 };

export const DurationSchema = z
  .string()
  .regex(new RegExp(DURATION_PATTERN), { message: 'use a duration such as 30m, 1h or 1h30m (units h, m, s)' })
  .refine((text) => parseDurationSeconds(text) > 0, { message: 'duration must be longer than 0s' });

/**
 * Seconds in a duration such as `1h30m`. Returns 0 for text that does not match DURATION_PATTERN (the schema
 * rejects such text before it reaches a caller).
 */
export function parseDurationSeconds(text: string): number {
  if (!new RegExp(DURATION_PATTERN).test(text)) return 0;
  let seconds = 0;
  for (const match of text.matchAll(/([0-9]+)(h|m|s)/g)) {
    const unit = match[2] as keyof typeof UNIT_SECONDS;
    seconds += Number(match[1]) * UNIT_SECONDS[unit];
  }
  return seconds;
}
