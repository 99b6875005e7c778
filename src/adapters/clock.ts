/**
 * The injected clock of the imperative shell (STYLE.md habit 7): the core never reads time itself; the shell
 * reads it here once per step and passes `now` down. Tests pass a fixed clock.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  nowMs(): number;
}

/** The wall clock of this process. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that always answers `nowMs` (tests, dry runs). */
export function fixedClock(nowMs: number): Clock {
  return { nowMs: () => nowMs };
}
