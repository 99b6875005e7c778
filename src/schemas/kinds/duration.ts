import { z } from 'zod';
import { type CrossFieldRule, withRules } from './rules.ts';

/**
 * Go-style durations as Cluster API users write them (`30m`, `1h30m`, `90s`); the unit is required and only
 * `h`, `m` and `s` are accepted, because the shortest useful interval of a drift check or refresh is seconds.
 * At most five digits a part and 16 characters: the API server checks the bounds with CEL's `duration()`,
 * which fails (an unreadable error) past Go's 290-year limit, and within these limits no value gets there.
 */
export const DURATION_PATTERN = '^([0-9]{1,5}(h|m|s))+$';

/** Longest duration text; with five digits a part, no value reaches Go's 290-year duration limit. */
export const DURATION_MAX_LENGTH = 16;

const UNIT_SECONDS: Readonly<Record<'h' | 'm' | 's', number>> = { h: 3600, m: 60, s: 1 };

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

/** Bounds of an interval, in CEL duration literals and the same in seconds. */
export interface DurationBounds {
  /** The shortest interval, e.g. `1m`; also the CEL literal. */
  min: string;
  /** The longest interval, e.g. `8760h`; also the CEL literal. */
  max: string;
  /** Why the minimum, for the message a person reads when the value is refused. */
  why: string;
}

/**
 * The bound rule of a duration field: CEL's `duration()` parses Go durations as the pattern writes them, so
 * the API server refuses `0s` or `10s` at admission with the same message zod gives (the controller used to
 * accept them into etcd and leave the object `SpecInvalid`).
 */
export function durationWithin(bounds: DurationBounds): CrossFieldRule<string> {
  const minSeconds = parseDurationSeconds(bounds.min);
  const maxSeconds = parseDurationSeconds(bounds.max);
  const message = `must be between ${bounds.min} and ${bounds.max}: ${bounds.why}`;
  return {
    cel: `duration(self) >= duration('${bounds.min}') && duration(self) <= duration('${bounds.max}')`,
    message,
    // Text off the pattern gets the pattern's message only; parseDurationSeconds would read it as 0s.
    holds: (text) => {
      if (!new RegExp(DURATION_PATTERN).test(text)) return true;
      const seconds = parseDurationSeconds(text);
      return seconds >= minSeconds && seconds <= maxSeconds;
    },
    describe: (text) => `${text} ${message}`,
  };
}

/** A duration field bounded by `bounds`, checked by zod and by the API server (CEL) alike. */
export function durationSchema(bounds: DurationBounds) {
  return withRules(
    z.string().max(DURATION_MAX_LENGTH).regex(new RegExp(DURATION_PATTERN), {
      message: 'use a duration such as 30m, 1h or 1h30m (units h, m, s; at most five digits a part)',
    }),
    [durationWithin(bounds)],
  );
}
