import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { type CrossFieldRule, withRules } from './rules.ts';

/**
 * The drift check's cron schedule (DESIGN.md section 2): a grammar narrow enough that the API server can tell
 * at admission exactly which schedules the controller's cron-parser reads, so none is stored and then left
 * `SpecInvalid`. Five numeric fields (minute hour day-of-month month day-of-week, UTC; no leading zeros),
 * each `*`, `*\/step`, a value, a range `a-b`, or a list of values `a,b,c`; or a macro (`@hourly` …
 * `@yearly`). No names, no `?`, `L`, `W`, `#`, no steps on ranges: cron-parser reads more, but the pattern
 * and one CEL rule must decide alone, and what they cannot check is refused rather than left for the
 * controller to refuse.
 */

/** One field of values matching `value`: `*`, `*\/step`, a value, a range, or a list of values. */
function field(value: string): string {
  return `(\\*(/[1-9][0-9]?)?|${value}(-${value})?|${value}(,${value})+)`;
}

// No leading zeros: a list's values are then distinct exactly when their texts are, which CEL checks cheaply.
const MINUTE = '[1-5]?[0-9]';
const HOUR = '(1?[0-9]|2[0-3])';
const DAY_OF_MONTH = '([1-9]|[12][0-9]|3[01])';
const MONTH = '([1-9]|1[0-2])';
// 0-6: cron-parser also reads 7 as Sunday, and then refuses `0,7` as a duplicate the pattern cannot see.
const DAY_OF_WEEK = '[0-6]';

export const CRON_MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly'] as const;

/** The schedule's grammar (RE2 and JavaScript read it alike: no classes beyond digits). */
export const CRON_PATTERN = `^(${CRON_MACROS.join('|')}|${[MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK].map(field).join(' ')})$`;

/**
 * Longest schedule text: the API server estimates the CEL rule's cost from it (the list check grows with its
 * cube), and 64 holds any schedule a drift check needs (`0,15,30,45 9-17 * * 1-5` is 23).
 */
export const CRON_MAX_LENGTH = 64;

/** Field `i` (0: minute … 4: day of week) of the schedule, in CEL (no `cel.bind` in the API server's CEL). */
function celField(i: number): string {
  return `self.split(' ')[${i}]`;
}

const FIELDS = [0, 1, 2, 3, 4];

/**
 * What the pattern cannot see and cron-parser refuses: a range running backwards (`30-10`), a value twice in
 * a list (`5,5`), and a day of month some months lack (`0 0 31 2 *`). The last is refused for any named
 * month with day 30 or 31, which also refuses `0 0 31 1 *` (cron-parser reads it): the rule stays within the
 * API server's CEL cost budget, which fixed field indexes and text comparisons keep small.
 */
export const cronScheduleCoherent: CrossFieldRule<string> = {
  cel: `self.startsWith('@') || (${[
    ...FIELDS.map(
      (i) =>
        `(!${celField(i)}.contains('-') || int(${celField(i)}.split('-')[0]) <= int(${celField(i)}.split('-')[1]))`,
    ),
    ...FIELDS.map((i) => `${celField(i)}.split(',').all(v, ${celField(i)}.split(',').exists_one(w, w == v))`),
    `(${celField(2)}.startsWith('*') || ${celField(3)}.startsWith('*') || ${celField(2)}.split(',').exists(v, int(v.split('-')[0]) < 30))`,
  ].join(' && ')})`,
  message:
    'schedule ranges must run upwards (10-30), list values must differ, and a day of month 30 or 31 needs month *; e.g. "0 */6 * * *"',
  holds: (text) => {
    if (!new RegExp(CRON_PATTERN).test(text) || text.startsWith('@')) return true;
    const fields = text.split(' ');
    const upwards = fields.every(
      (f) => !f.includes('-') || Number(f.split('-')[0]) <= Number(f.split('-')[1]),
    );
    const distinct = fields.every((f) => new Set(f.split(',')).size === f.split(',').length);
    const [, , dayOfMonth = '*', month = '*'] = fields;
    const dayExists =
      dayOfMonth.startsWith('*') ||
      month.startsWith('*') ||
      dayOfMonth.split(',').some((v) => Number(v.split('-')[0]) < 30);
    return upwards && distinct && dayExists;
  },
};

/** A schedule the controller reads with cron-parser (UTC), as decideOp does. */
function parsesAsCron(text: string): boolean {
  try {
    CronExpressionParser.parse(text, { tz: 'UTC' });
    return true;
  } catch {
    return false;
  }
}

export const CronScheduleSchema = withRules(
  z
    .string()
    .max(CRON_MAX_LENGTH)
    .regex(new RegExp(CRON_PATTERN), {
      message:
        'use five numeric cron fields (each *, */step, a value, a range a-b or a list a,b) or a macro such as @daily, e.g. "0 */6 * * *"',
    })
    // The pattern and the rule are meant to admit only what cron-parser reads (a property test holds them
    // to it); this check keeps the controller's verdict the library's own should they ever part.
    .refine(parsesAsCron, { message: 'schedule is not a valid cron expression (five fields, UTC)' }),
  [cronScheduleCoherent],
);
