import { PLAN_CHANGES_MAX_BYTES, type PlanChanges, PlanChangesSchema } from './plan-changes.ts';

/**
 * How the readable plan travels from the runner to the controller (DESIGN.md section 11): in the `source`
 * container's log, as the last lines the runner prints before its result, because the termination message
 * holds 4096 bytes and the readable plan up to PLAN_CHANGES_MAX_BYTES (the same route Tekton takes for
 * results larger than a termination message, TEP-0127). Each line is
 * `captf-plan-changes <i>/<n> <chunk>`: the JSON cut into chunks of at most CHUNK_CHARS characters, so no
 * line nears the 16 KiB a container runtime splits log lines at. Only the runner writes lines that start
 * so: Terraform's own lines are relayed with a `[step] ` prefix (src/runner/log.ts). Both functions are
 * pure; the controller reads the last PLAN_CHANGES_LOG_TAIL_LINES lines of the log.
 */

/** The prefix of every line of the readable plan. */
export const PLAN_CHANGES_LOG_PREFIX = 'captf-plan-changes';

/** Characters of JSON per line (at most 16,000 bytes of UTF-8). */
const CHUNK_CHARS = 4000;

/**
 * Log lines the controller reads from the end: every chunk of the largest readable plan (33 lines, each
 * a worst case 4-byte character per character: still 33 lines, chunks count characters) and the few
 * lines the runner prints after it, with room to spare.
 */
export const PLAN_CHANGES_LOG_TAIL_LINES = Math.ceil(PLAN_CHANGES_MAX_BYTES / CHUNK_CHARS) + 60;

/** The log lines (each ending in `\n`) that carry `json`. */
export function planChangesLogLines(json: string): string[] {
  const chars = [...json];
  const chunks: string[] = [];
  for (let at = 0; at < chars.length; at += CHUNK_CHARS)
    chunks.push(chars.slice(at, at + CHUNK_CHARS).join(''));
  return chunks.map((chunk, i) => `${PLAN_CHANGES_LOG_PREFIX} ${i + 1}/${chunks.length} ${chunk}\n`);
}

/** Outcome of reading the readable plan from a log: a value, never a throw; messages name no content. */
export type ReadPlanChangesLog =
  | { ok: true; changes: PlanChanges }
  | { ok: false; reason: 'absent' | 'incomplete' | 'invalid'; message: string };

const LINE = new RegExp(`^${PLAN_CHANGES_LOG_PREFIX} (\\d+)/(\\d+) (.*)$`);

/**
 * Reads the newest complete readable plan from the tail of a container log (any line endings, other lines
 * in between ignored): the last run of chunks `1/n … n/n`, joined, parsed with PlanChangesSchema.
 */
export function readPlanChangesLog(log: string): ReadPlanChangesLog {
  let chunks: string[] | undefined;
  let total = 0;
  let complete: string[] | undefined;
  let seen = false;
  for (const line of log.split(/\r?\n/)) {
    const match = LINE.exec(line);
    if (match === null) continue;
    seen = true;
    const index = Number(match[1]);
    const count = Number(match[2]);
    if (index === 1) {
      chunks = [];
      total = count;
    }
    if (chunks === undefined || count !== total || index !== chunks.length + 1) {
      chunks = undefined;
      continue;
    }
    chunks.push(match[3] ?? '');
    if (chunks.length === total) {
      complete = chunks;
      chunks = undefined;
    }
  }
  if (complete === undefined) {
    return !seen
      ? { ok: false, reason: 'absent', message: 'read plan changes: the log has none' }
      : { ok: false, reason: 'incomplete', message: 'read plan changes: the log holds only part of them' };
  }
  let json: unknown;
  try {
    json = JSON.parse(complete.join(''));
  } catch {
    return { ok: false, reason: 'invalid', message: 'read plan changes: not JSON' };
  }
  const parsed = PlanChangesSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return {
      ok: false,
      reason: 'invalid',
      message: `read plan changes: ${first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'invalid'}`,
    };
  }
  return { ok: true, changes: parsed.data };
}
