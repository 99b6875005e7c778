/**
 * Crash points of the step (issue 4, "crash safety"): a named place right after an API or Redis mutation
 * where a test can make the step stop dead, as a process killed at that instant would. Enabled only by
 * `CAPTF_FAILPOINTS` (read once by the composition root and passed in); production runs with none.
 */

/** Every mutation the step makes, named after what has just happened. */
export const FAILPOINTS = [
  'after-step-lock',
  'after-finalizer-patch',
  'after-bookkeep-status',
  'after-bookkept-mark',
  'after-run-secret-delete',
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
  /** Throws FailpointAbort when `point` is armed; otherwise does nothing. */
  hit(point: Failpoint): void;
}

/** No failpoint armed: production. */
export const NO_FAILPOINTS: Failpoints = { hit: () => undefined };

/** Failpoints armed from a set; each fires every time it is reached. */
export function armedFailpoints(points: Iterable<Failpoint>): Failpoints {
  const armed = new Set(points);
  return {
    hit(point) {
      if (armed.has(point)) throw new FailpointAbort(point);
    },
  };
}

/** Outcome of reading `CAPTF_FAILPOINTS`: a value, never a throw. */
export type ParsedFailpoints = { ok: true; failpoints: Failpoints } | { ok: false; message: string };

function isFailpoint(name: string): name is Failpoint {
  return (FAILPOINTS as readonly string[]).includes(name);
}

/**
 * Parses `CAPTF_FAILPOINTS` (comma-separated names, e.g. `after-job-create,after-bookkeep-status`); empty
 * or undefined arms none. An unknown name is an error, so a typo never silently disarms a crash test.
 */
export function parseFailpoints(text: string | undefined): ParsedFailpoints {
  const names = (text ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) return { ok: true, failpoints: NO_FAILPOINTS };
  const unknown = names.filter((name) => !isFailpoint(name));
  if (unknown.length > 0) {
    return { ok: false, message: `read CAPTF_FAILPOINTS: unknown failpoint(s) ${unknown.join(', ')}` };
  }
  return { ok: true, failpoints: armedFailpoints(names.filter(isFailpoint)) };
}
