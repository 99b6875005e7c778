import { writeSync } from 'node:fs';

/**
 * Crash points of the step (issue 4, "crash safety"): a named place right after an API or Redis mutation
 * where a test can make the step stop dead, as a process killed at that instant would. Enabled only by
 * `CAPTF_FAILPOINTS` and `CAPTF_FAILPOINT_MODE` (read once by the composition root and passed in);
 * production runs with none.
 */

/** Every mutation the step makes, named after what has just happened. */
export const FAILPOINTS = [
  'after-step-lock',
  'after-finalizer-patch',
  'after-block-move',
  'after-state-label',
  'after-bookkeep-status',
  'after-run-secret-delete',
  'after-bookkept-mark',
  'after-lease-release',
  'after-prune-delete',
  'after-event',
  'after-plan-write',
  'after-contract-spec-patch',
  'after-deadline-delete',
  'after-stuck-delete',
  'after-lease-renew',
  'after-lease-take',
  'after-slot-take',
  'after-runner-identity',
  'after-job-create',
  'after-run-secret-create',
  'after-active-status',
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/** Thrown at an armed failpoint; the step lets it escape untouched (no cleanup, like a crash). */
export class FailpointAbort extends Error {
  override readonly name = 'FailpointAbort';
  readonly failpoint: Failpoint;

  constructor(failpoint: Failpoint) {
    super(`abort step: failpoint ${failpoint}`);
    this.failpoint = failpoint;
  }
}

/** The armed failpoints of one process; `hit` is called after each mutation. */
export interface Failpoints {
  /** Fires (throws FailpointAbort, or ends the process) when `point` is armed and its chance comes up. */
  hit(point: Failpoint): void;
}

/** No failpoint armed: production. */
export const NO_FAILPOINTS: Failpoints = { hit: () => undefined };

/**
 * What an armed failpoint does when it fires (`CAPTF_FAILPOINT_MODE`): `throw` FailpointAbort in-process
 * (the default; the integration tests then expire the step lock as a crash would), or `exit`: the process
 * dies on the spot (SIGKILL to itself), so a fault suite kills real handler processes mid-step and
 * restarts them, with no `finally`, no lock release, no log flush.
 */
export const FAILPOINT_MODES = ['throw', 'exit'] as const;
export type FailpointMode = (typeof FAILPOINT_MODES)[number];

/** One armed failpoint: fires when reached with probability `chance` (1 = every time). */
export interface ArmedFailpoint {
  point: Failpoint;
  chance: number;
}

/** How a fired failpoint in `exit` mode ends the process; tests of the parser pass their own. */
export interface FailpointEffects {
  /** A number in [0, 1): a point fires when it is below the point's chance. Default Math.random. */
  random?: () => number;
  /** Ends the process; must not return. Default: a line on stderr, then SIGKILL to itself. */
  die?: (point: Failpoint) => never;
}

/** The stderr line a process writes as it dies at a failpoint (the fault suite counts these). */
export function failpointExitLine(point: Failpoint): string {
  return `captf-failpoint: exit at ${point}`;
}

function dieNow(point: Failpoint): never {
  // Synchronous, so the line is in the pipe before the kill: an async logger would lose it.
  writeSync(2, `${failpointExitLine(point)}\n`);
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL is not deliverable to oneself synchronously on every platform; never run on past a crash.
  process.exit(137);
}

/**
 * Failpoints armed from a list (a bare name is chance 1: each fires every time it is reached). In `exit`
 * mode a firing point ends the process instead of throwing.
 */
export function armedFailpoints(
  points: Iterable<Failpoint | ArmedFailpoint>,
  mode: FailpointMode = 'throw',
  effects: FailpointEffects = {},
): Failpoints {
  const armed = new Map<Failpoint, number>();
  for (const entry of points) {
    if (typeof entry === 'string') armed.set(entry, 1);
    else armed.set(entry.point, entry.chance);
  }
  const random = effects.random ?? Math.random;
  const die = effects.die ?? dieNow;
  return {
    hit(point) {
      const chance = armed.get(point);
      if (chance === undefined) return;
      // Chance 1 draws nothing: a deterministic crash test stays deterministic.
      if (chance < 1 && random() >= chance) return;
      if (mode === 'exit') die(point);
      throw new FailpointAbort(point);
    },
  };
}

/** Outcome of reading `CAPTF_FAILPOINTS`: a value, never a throw. */
export type ParsedFailpoints = { ok: true; failpoints: Failpoints } | { ok: false; message: string };

function isFailpoint(name: string): name is Failpoint {
  return (FAILPOINTS as readonly string[]).includes(name);
}

function isFailpointMode(name: string): name is FailpointMode {
  return (FAILPOINT_MODES as readonly string[]).includes(name);
}

/** `name` or `name@chance` with chance a decimal in (0, 1]; undefined when malformed. */
function parseEntry(text: string): { name: string; chance: number } | undefined {
  const at = text.indexOf('@');
  if (at < 0) return { name: text, chance: 1 };
  const chanceText = text.slice(at + 1).trim();
  // Decimal only: Number('') is 0 and Number('0x1') is 1, neither of which anyone means.
  if (!/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(chanceText)) return undefined;
  const chance = Number(chanceText);
  if (!(chance > 0 && chance <= 1)) return undefined;
  return { name: text.slice(0, at).trim(), chance };
}

/**
 * Parses `CAPTF_FAILPOINTS` (comma-separated entries `name` or `name@chance`, e.g.
 * `after-job-create,after-bookkeep-status@0.2`) and `CAPTF_FAILPOINT_MODE` (`throw`, the default, or
 * `exit`); empty or undefined arms none. An unknown name, a malformed chance or an unknown mode is an
 * error, so a typo never silently disarms a crash test.
 */
export function parseFailpoints(text: string | undefined, modeText?: string): ParsedFailpoints {
  const mode = (modeText ?? '').trim() === '' ? 'throw' : (modeText ?? '').trim();
  if (!isFailpointMode(mode)) {
    return {
      ok: false,
      message: `read CAPTF_FAILPOINT_MODE: unknown mode ${mode} (expected ${FAILPOINT_MODES.join(' or ')})`,
    };
  }
  const entries = (text ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return { ok: true, failpoints: NO_FAILPOINTS };
  const malformed = entries.filter((entry) => parseEntry(entry) === undefined);
  if (malformed.length > 0) {
    return {
      ok: false,
      message: `read CAPTF_FAILPOINTS: a chance is a decimal in (0, 1]: ${malformed.join(', ')}`,
    };
  }
  const parsed = entries.flatMap((entry) => {
    const one = parseEntry(entry);
    return one === undefined ? [] : [one];
  });
  const unknown = parsed.filter((entry) => !isFailpoint(entry.name)).map((entry) => entry.name);
  if (unknown.length > 0) {
    return { ok: false, message: `read CAPTF_FAILPOINTS: unknown failpoint(s) ${unknown.join(', ')}` };
  }
  const armed = parsed.flatMap((entry) =>
    isFailpoint(entry.name) ? [{ point: entry.name, chance: entry.chance }] : [],
  );
  return { ok: true, failpoints: armedFailpoints(armed, mode) };
}
