import { createHash } from 'node:crypto';

/**
 * Deterministic jitter (DESIGN.md section 3): each object gets a fixed fraction in [0, 0.1) from its UID, so
 * a fleet created at once spreads its drift checks and refreshes, and one object's schedule never wobbles.
 */

/** Largest jitter, as a fraction of the interval. */
export const MAX_JITTER_FRACTION = 0.1;

/** The object's jitter fraction in [0, MAX_JITTER_FRACTION), from the first 32 bits of SHA-256(uid). */
export function jitterFraction(uid: string): number {
  const word = createHash('sha256').update(uid).digest().readUInt32BE(0);
  return (word / 2 ** 32) * MAX_JITTER_FRACTION;
}

/** `seconds` stretched by the object's jitter, in seconds (never shorter than `seconds`). */
export function jittered(seconds: number, uid: string): number {
  return seconds * (1 + jitterFraction(uid));
}
